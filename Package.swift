// swift-tools-version: 6.0
//
// ObserveCore: key-value observation for Swift with a C core.
//
// Conditional-compilation flags (see each paragraph before enabling one by hand):
//
// - COBS_INTERNAL_CHECKS (C): every mutating call of the C core re-verifies its structure's
//   invariants in debug builds. It turns O(1) operations into O(capacity) ones and so
//   invalidates every documented performance guarantee. It is on only when the environment says
//   OBSERVECORE_INTERNAL_CHECKS=1 (this project's test command and CI do), so that a package
//   depending on ObserveCore gets a debug build whose costs are the documented ones.
// - COBS_DETERMINISTIC_HASHING (C): `cobs_registry_create` uses a fixed seed instead of
//   `arc4random_buf`. Tests that need reproducible collisions call `cobs_registry_create_with`
//   with an explicit seed instead, so this stays off; enable it to reproduce a run exactly.
import CompilerPluginSupport
import PackageDescription

/// Whether the C core's internal consistency checks are compiled into debug builds.
let internalChecks = Context.environment["OBSERVECORE_INTERNAL_CHECKS"] == "1"

let package = Package(
    name: "ObserveCore",
    // The library uses the Synchronization module (`Atomic`, `Mutex`), which these releases
    // introduced; Linux needs no entry.
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "ObserveCore", targets: ["ObserveCore"]),
        // `@KeyValueObservable` and friends. A separate product: only its users build swift-syntax.
        .library(name: "ObserveCoreMacros", targets: ["ObserveCoreMacros"]),
        // observe-bench is deliberately not a product: it is not part of the public interface.
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.1.0"),
        .package(url: "https://github.com/OpenCombine/OpenCombine", from: "0.14.0"),
        // 603 or later: 602.0.0 builds but its plug-ins fail at every expansion on Swift 6.3.1
        // ("Internal Error: DecodingError … Corrupted JSON"). A range lets clients share one copy.
        .package(url: "https://github.com/swiftlang/swift-syntax", "603.0.0"..<"700.0.0"),
    ],
    targets: [
        .target(
            name: "CObserveCore",
            path: "Sources/CObserveCore",
            cSettings: (internalChecks ? [.define("COBS_INTERNAL_CHECKS", .when(configuration: .debug))] : [])
                // + [.define("COBS_DETERMINISTIC_HASHING")]
            ,
            linkerSettings: [.linkedLibrary("bsd", .when(platforms: [.linux]))]
        ),
        .target(
            name: "ObserveCore",
            dependencies: ["CObserveCore"],
            path: "Sources/ObserveCore"
        ),
        .macro(
            name: "ObserveCoreMacrosPlugin",
            dependencies: [
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
            ],
            path: "Sources/ObserveCoreMacrosPlugin"
        ),
        .target(
            name: "ObserveCoreMacros",
            dependencies: ["ObserveCore", "ObserveCoreMacrosPlugin"],
            path: "Sources/ObserveCoreMacros"
        ),
        // SplitMix64, the seeded generator of the random tests and of the benchmark's edit
        // scripts, and FNV-1a, the checksum the replication test and its replica process share
        // (one copy for all of them).
        .target(
            name: "SeededRandom",
            path: "Sources/SeededRandom"
        ),
        // observe-bench's allocation counter: it replaces malloc and friends for the whole process
        // it is linked into, so no other target may depend on it (see its header).
        .target(
            name: "BenchAllocCounter",
            path: "Sources/BenchAllocCounter"
        ),
        .executableTarget(
            name: "observe-bench",
            dependencies: [
                "ObserveCore",
                "BenchAllocCounter",
                "SeededRandom",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "OpenCombine", package: "OpenCombine"),
            ],
            path: "Sources/observe-bench"
        ),
        // The replica process of the cross-process replication test.
        .executableTarget(
            name: "observe-replica",
            dependencies: ["ObserveCore", "SeededRandom"],
            path: "Sources/observe-replica"
        ),
        .testTarget(
            name: "CObserveCoreTests",
            dependencies: ["CObserveCore", "SeededRandom"],
            path: "Tests/CObserveCoreTests"
        ),
        // What the test suites share and that does not depend on how their models are declared:
        // the leak check, the lifetime tracker, fixtures (values, a log, a lock, threads).
        .target(
            name: "ObserveCoreTestSupport",
            dependencies: ["ObserveCore"],
            path: "Tests/ObserveCoreTestSupport"
        ),
        .testTarget(
            name: "ObserveCoreTests",
            dependencies: ["ObserveCore", "ObserveCoreTestSupport", "SeededRandom", "observe-replica"],
            path: "Tests/ObserveCoreTests"
        ),
        // A client written as a Swift 6 application would be: main-actor view models and actors
        // observing models and arrays, strict concurrency checked (the build must stay warning-free).
        .testTarget(
            name: "ObserveCoreClientTests",
            dependencies: ["ObserveCore"],
            path: "Tests/ObserveCoreClientTests",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The ObserveCoreTests suites that speak of declared models (property, array, chain,
        // dependent, stream and binding behaviour), linked here unchanged, run over the same models
        // declared with @KeyValueObservable (MacroDeclaredModels.swift): both declaration forms
        // pass the same tests.
        .testTarget(
            name: "ObserveCoreMacroFormTests",
            dependencies: ["ObserveCoreMacros", "ObserveCoreTestSupport", "SeededRandom"],
            path: "Tests/ObserveCoreMacroFormTests"
        ),
        // Every Swift block of README.md, verbatim in compiling context; a test fails when the
        // README and the compiled copy differ.
        .testTarget(
            name: "ReadmeSnippetTests",
            dependencies: ["ObserveCoreMacros"],
            path: "Tests/ReadmeSnippetTests"
        ),
        // Models declared with the macros, run through the property, array, chain, dependent,
        // stream and binding behaviour; and the expansions themselves, diagnostics included.
        .testTarget(
            name: "ObserveCoreMacrosTests",
            dependencies: [
                "ObserveCoreMacros",
                "ObserveCoreMacrosPlugin",
                .product(name: "SwiftSyntaxMacrosTestSupport", package: "swift-syntax"),
            ],
            path: "Tests/ObserveCoreMacrosTests"
        ),
    ]
)
