/*
** The byte form of a change's runs (format in cobs_wire.h). Encoding validates first, so only
** canonical changes are ever written; decoding parses with every read bounds-checked, then
** validates, so a malformed or hostile input is rejected before anyone applies it.
*/
#include "cobs_wire.h"

#include <string.h>

/* A varint's bytes for v (1...10). */
static size_t varint_size(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) { v >>= 7; n++; }
    return n;
}

static size_t put_varint(uint8_t *out, uint64_t v) {
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

/* Reads a minimal varint at in[*pos..<length]; false when truncated, longer than 10 bytes,
** overflowing 64 bits, or not minimal (a final zero group after the first byte). */
static int get_varint(const uint8_t *in, size_t length, size_t *pos, uint64_t *value) {
    uint64_t v = 0;
    for (unsigned shift = 0, i = 0; i < 10; i++, shift += 7) {
        if (*pos >= length) return 0;
        uint8_t byte = in[(*pos)++];
        uint64_t group = byte & 0x7F;
        if (i == 9 && group > 1) return 0;                 /* bits beyond 64 */
        v |= group << shift;
        if ((byte & 0x80) == 0) {
            if (i > 0 && group == 0) return 0;             /* not minimal */
            *value = v;
            return 1;
        }
    }
    return 0;
}

size_t cobs_wire_max_size(size_t count) {
    /* version + 3 varints + per run: op + 3 varints; SIZE_MAX when that does not fit a size_t */
    if (count > (SIZE_MAX - 31) / 31) return SIZE_MAX;
    return 1 + 3 * 10 + count * (1 + 3 * 10);
}

cobs_status cobs_wire_encode_runs(const cobs_run *runs, size_t count, uint64_t old_count, uint64_t new_count,
                                  uint8_t *out, size_t capacity, size_t *written) {
    if (written == NULL || (runs == NULL && count > 0) || (out == NULL && capacity > 0)) return COBS_INVALID_ARGUMENT;
    if (cobs_changes_validate(runs, count, old_count, new_count) != COBS_OK) return COBS_INVALID_ARGUMENT;
    size_t need = 1 + varint_size(old_count) + varint_size(new_count) + varint_size((uint64_t)count);
    for (size_t i = 0; i < count; i++) {
        need += 1 + varint_size(runs[i].start) + varint_size(runs[i].length);
        if (runs[i].op == COBS_RUN_MOVE) need += varint_size(runs[i].to);
    }
    if (capacity < need) {
        *written = need;
        return COBS_BUFFER_TOO_SMALL;
    }
    size_t n = 0;
    out[n++] = COBS_WIRE_VERSION;
    n += put_varint(out + n, old_count);
    n += put_varint(out + n, new_count);
    n += put_varint(out + n, (uint64_t)count);
    for (size_t i = 0; i < count; i++) {
        out[n++] = (uint8_t)runs[i].op;
        n += put_varint(out + n, runs[i].start);
        n += put_varint(out + n, runs[i].length);
        if (runs[i].op == COBS_RUN_MOVE) n += put_varint(out + n, runs[i].to);
    }
    *written = n;
    return COBS_OK;
}

cobs_status cobs_wire_decode_runs(const uint8_t *in, size_t length, cobs_run *runs_out, size_t capacity,
                                  size_t *run_count, uint64_t *old_count, uint64_t *new_count, size_t *consumed) {
    if (run_count == NULL || old_count == NULL || new_count == NULL || consumed == NULL) return COBS_INVALID_ARGUMENT;
    if (in == NULL || length == 0 || in[0] != COBS_WIRE_VERSION) return COBS_INVALID_ARGUMENT;
    size_t pos = 1;
    uint64_t olds, news, count;
    if (!get_varint(in, length, &pos, &olds) || !get_varint(in, length, &pos, &news)
        || !get_varint(in, length, &pos, &count)) {
        return COBS_INVALID_ARGUMENT;
    }
    /* Every run takes at least 3 bytes: a count the input cannot hold is malformed, whatever
    ** buffer the caller offers (and no caller is asked to allocate for it). */
    if (count > (length - pos) / 3) return COBS_INVALID_ARGUMENT;
    if (runs_out == NULL && capacity > 0) return COBS_INVALID_ARGUMENT;
    if (count > capacity) {
        *run_count = (size_t)count;
        return COBS_BUFFER_TOO_SMALL;
    }
    for (size_t i = 0; i < (size_t)count; i++) {
        if (pos >= length) return COBS_INVALID_ARGUMENT;
        uint8_t op = in[pos++];
        if (op < COBS_RUN_REMOVE || op > COBS_RUN_MODIFY) return COBS_INVALID_ARGUMENT;
        cobs_run run = {op, 0, 0, 0, 0};
        if (!get_varint(in, length, &pos, &run.start) || !get_varint(in, length, &pos, &run.length)) {
            return COBS_INVALID_ARGUMENT;
        }
        if (op == COBS_RUN_MOVE && !get_varint(in, length, &pos, &run.to)) return COBS_INVALID_ARGUMENT;
        runs_out[i] = run;
    }
    if (cobs_changes_validate(runs_out, (size_t)count, olds, news) != COBS_OK) return COBS_INVALID_ARGUMENT;
    *run_count = (size_t)count;
    *old_count = olds;
    *new_count = news;
    *consumed = pos;
    return COBS_OK;
}
