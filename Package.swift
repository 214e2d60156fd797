// swift-tools-version: 6.0
import PackageDescription

/// composer-cli carries the Swift runtime and Foundation inside it (`-static-stdlib`; speakerd and
/// its probe use `speakerdImage` below, without Foundation):
/// mapping and relocating the shared libswiftCore, Foundation and ICU libraries is most of an
/// idle daemon's RSS and of its time to exec (docs/BENCHMARKS.md, "Start-up").
///
/// SpeakerCore and the tests keep the shared runtime; only the final link of an executable is
/// static. Its objects were compiled against the shared Foundation, whose autolink entries do not
/// name the static archives Foundation needs, so they are listed here (as `swiftc -static-stdlib`
/// itself lists them), in one group so their order does not matter.
let staticSwiftRuntime: [LinkerSetting] = [.unsafeFlags([
    "-static-stdlib",
    "-Xlinker", "--start-group",
    "-lFoundation", "-lFoundationEssentials", "-lFoundationInternationalization", "-lCoreFoundation",
    "-l_FoundationICU", "-l_FoundationCShims", "-l_FoundationCollections",
    "-lswiftSynchronization", "-lswiftDispatch", "-ldispatch", "-lBlocksRuntime",
    "-Xlinker", "--end-group",
])]

/// speakerd's own image, smaller in memory at idle (docs/BENCHMARKS.md, "Start-up"): an idle daemon's
/// RSS is mostly clean pages of this binary that the kernel maps around each page fault, so what
/// counts is how densely the code run at start-up is packed, not only how big the binary is.
/// - No libFoundation, CoreFoundation or ICU: SpeakerCore and speakerd use FoundationEssentials.
/// - lld with `--symbol-ordering-file`: the functions a start-up runs (`link/speakerd-startup.order`,
///   recorded by `scripts/startup-order`) are laid out together, so the pages they touch are few.
///   A stale list costs only memory: names no longer in the image are skipped, new code goes after.
/// - `-z pack-relative-relocs` (DT_RELR, glibc 2.36+, Debian 12): the ~51,000 relative
///   relocations of the position-independent image take 10 KB instead of 1.2 MB, all of it read
///   at every start.
/// - `--no-export-dynamic`: `-static-stdlib` exports every symbol of the image (for `dlsym` on
///   its own symbols, which speakerd never does); the 12,800 exported names were 1.2 MB of
///   `.dynsym`/`.dynstr`/`.gnu.hash` that the dynamic loader reads at each start.
/// - libstdc++ linked statically (`link/static-libstdc++`): the Swift runtime needs a few of its
///   functions, and the shared library cost 1.1 MiB of resident pages.
/// lld takes the first archive on the command line that defines a symbol, so Foundation must not
/// be on it at all (see SpeakerCore's `noFoundation`), or a specialisation both Foundation and
/// FoundationEssentials define would pull Foundation back in.
let speakerdImage: [LinkerSetting] = [.unsafeFlags([
    "-static-stdlib",
    "-use-ld=lld",
    "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
    "-Xlinker", "--symbol-ordering-file=\(Context.packageDirectory)/link/speakerd-startup.order",
    "-Xlinker", "--no-warn-symbol-ordering",
    "-Xlinker", "--no-export-dynamic",
    "-L\(Context.packageDirectory)/link/static-libstdc++",
    "-Xlinker", "--start-group",
    "-lFoundationEssentials", "-l_FoundationICU", "-l_FoundationCShims", "-l_FoundationCollections",
    "-lswiftSynchronization", "-lswiftDispatch", "-ldispatch", "-lBlocksRuntime",
    "-Xlinker", "--end-group",
])]

/// libdbus and libbluetooth are linked statically into every program (SpeakerCore's linker settings).
/// The shared libdbus pulls in libsystemd and, through it, libgcrypt, libgpg-error, libzstd, liblzma,
/// liblz4 and libcap: relocating and mapping those eight libraries was 1.1 MiB of an idle speakerd's
/// 12.2 MiB and 1–3 ms of its start (docs/BENCHMARKS.md, "Idle RSS round (session 5)"). libdbus-1.a asks libsystemd
/// for only two functions, which SpeakerCore defines (`SocketActivation.swift`).
/// The cost: a libdbus or libbluetooth security update needs speakerd rebuilt, like any static library.
///
/// That is also why CBlueZ has no `pkgConfig:`. SwiftPM puts a system library's pkg-config flags
/// (`-L/usr/lib/<multiarch> -ldbus-1`) at the front of every link, ahead of anything a target can
/// say, so the shared libdbus would always win. The headers are named here instead: libdbus keeps
/// one of them, dbus-arch-deps.h, in Debian's multiarch library directory.
#if arch(x86_64)
let multiarch = "x86_64-linux-gnu"
#elseif arch(arm64)
let multiarch = "aarch64-linux-gnu"
#elseif arch(arm)
let multiarch = "arm-linux-gnueabihf"
#elseif arch(riscv64)
let multiarch = "riscv64-linux-gnu"
#else
#error("speakerd builds on Debian's amd64, arm64, armhf and riscv64")
#endif
let dbusHeaders: SwiftSetting = .unsafeFlags([
    "-Xcc", "-I/usr/include/dbus-1.0", "-Xcc", "-I/usr/lib/\(multiarch)/dbus-1.0/include",
])
let staticCBlueZLibraries: [LinkerSetting] = [.unsafeFlags([
    "-Xlinker", "-l:libdbus-1.a", "-Xlinker", "-l:libbluetooth.a",
])]

/// No autolink of Foundation from SpeakerCore: it uses FoundationEssentials, and a Foundation-only
/// call slipping in (one file's `import Foundation` makes Foundation's members visible in every
/// file of the module) now fails speakerd's link instead of silently bringing libFoundation,
/// CoreFoundation and ICU back into the daemon. Targets that want Foundation import it themselves.
/// (`-function-sections` for SpeakerCore, to order its code too, measured no better: not used.)
let noFoundation: [SwiftSetting] = [.unsafeFlags([
    "-Xfrontend", "-disable-autolink-library", "-Xfrontend", "Foundation",
    "-Xfrontend", "-disable-autolink-library", "-Xfrontend", "FoundationInternationalization",
])]

/// speakerd: a Bluetooth-speaker companion daemon (`speakerd`) and its CLI (`composer-cli`).
///
/// Everything with logic lives in `SpeakerCore`; the executables only parse, wire and run.
/// C libraries are reached through the two system-library modules and never leak past them.
let package = Package(
    name: "speakerd",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "SpeakerCore", targets: ["SpeakerCore"]),
        .executable(name: "speakerd", targets: ["speakerd"]),
        .executable(name: "composer-cli", targets: ["composer-cli"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-async-algorithms", from: "1.0.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
        .package(url: "https://github.com/apple/swift-system", from: "1.4.0"),
        .package(url: "https://github.com/pointfreeco/swift-clocks", from: "1.0.0"),
    ],
    targets: [
        // libdbus-1 and libbluetooth (BlueZ's libbluetooth: address parsing, HCI device listing),
        // from Debian's libdbus-1-dev and libbluetooth-dev. Headers: `dbusHeaders`; linking:
        // `staticCBlueZLibraries` (both above).
        .systemLibrary(name: "CBlueZ"),
        // libfluidsynth, opened with dlopen on first use rather than linked: it pulls ~80 shared
        // libraries that speakerd's start-up must not pay for (see include/CFluidSynth.h).
        // fluidsynth.h (libfluidsynth-dev) gives the types; libfluidsynth3 is needed at run time.
        .target(
            name: "CFluidSynth",
            linkerSettings: [.linkedLibrary("dl")]
        ),
        .target(
            name: "SpeakerCore",
            dependencies: [
                "CBlueZ",
                "CFluidSynth",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
                .product(name: "Collections", package: "swift-collections"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: noFoundation,
            linkerSettings: staticCBlueZLibraries
        ),
        .executableTarget(
            name: "speakerd",
            dependencies: [
                "SpeakerCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: noFoundation,
            linkerSettings: speakerdImage
        ),
        .executableTarget(
            name: "composer-cli",
            dependencies: [
                "SpeakerCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            linkerSettings: staticSwiftRuntime
        ),

        // Shared by the test targets: the private dbus-daemon + fake BlueZ harness, WAV analysis, a seeded RNG.
        .target(
            name: "TestSupport",
            dependencies: ["SpeakerCore"],
            path: "Sources/TestSupport"
        ),

        // Benchmarks: run in release builds (`scripts/bench`), figures in docs/BENCHMARKS.md.
        .executableTarget(name: "bench-dbus", dependencies: ["SpeakerCore", "CBlueZ"], path: "Benchmarks/bench-dbus"),
        .executableTarget(name: "bench-readiness", dependencies: ["SpeakerCore"], path: "Benchmarks/bench-readiness"),
        .executableTarget(name: "bench-playback", dependencies: ["SpeakerCore"], path: "Benchmarks/bench-playback"),
        .executableTarget(name: "bench-startup", dependencies: ["SpeakerCore"], path: "Benchmarks/bench-startup",
                         swiftSettings: noFoundation, linkerSettings: speakerdImage),

        .testTarget(name: "DBusTests", dependencies: ["SpeakerCore", "TestSupport"]),
        .testTarget(
            name: "ReadinessTests",
            dependencies: ["SpeakerCore", "TestSupport", .product(name: "Clocks", package: "swift-clocks")]
        ),
        .testTarget(
            name: "BlueZTests",
            dependencies: ["SpeakerCore", "TestSupport", .product(name: "Clocks", package: "swift-clocks")]
        ),
        .testTarget(name: "MIDITests", dependencies: ["SpeakerCore", "TestSupport"]),
        .testTarget(
            name: "PlaybackTests",
            dependencies: ["SpeakerCore", "TestSupport", .product(name: "Clocks", package: "swift-clocks")]
        ),
        .testTarget(
            name: "DaemonTests",
            dependencies: ["SpeakerCore", "TestSupport", .product(name: "Clocks", package: "swift-clocks")]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// Every Swift module that imports SpeakerCore loads CBlueZ's headers too.
for target in package.targets where target.type != .system {
    target.swiftSettings = (target.swiftSettings ?? []) + [dbusHeaders]
}
