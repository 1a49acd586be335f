/*
** ObserveCore C core — umbrella header. Include this one header from C; it pulls in the whole API.
** Every public symbol starts with `cobs_` / `COBS_`.
*/
#ifndef COBS_COBSERVE_H
#define COBS_COBSERVE_H

#define COBS_VERSION_MAJOR 0
#define COBS_VERSION_MINOR 1

#include "cobs_registry.h"
#include "cobs_changes.h"
#include "cobs_positions.h"
#include "cobs_barrier.h"
#include "cobs_wire.h"
#include "cobs_sanitizer.h"
#include "cobs_read_sections.h"

#endif /* COBS_COBSERVE_H */
