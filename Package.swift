// swift-tools-version: 6.0
import PackageDescription

/// composer-cli carries the Swift runtime and Foundation inside it (`-static-stdlib`; speakerd and
/// its probe use `speakerdImage` below, without Foundation):
/// mapping and relocating the shared libswiftCore, Foundation and ICU libraries is most of an
/// idle daemon's RSS and of its time to exec (docs/BENCHMARKS.md, "Start-up").
///
/// The library modules and the tests keep the shared runtime; only the final link of an executable is
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

/// speakerd's own image, smaller in memory at idle (docs/BENCHMARKS.md, "Start-up"):
/// - No libFoundation, CoreFoundation or ICU: the library modules and speakerd use FoundationEssentials
///   (`noFoundation` keeps a Foundation-only call from slipping into speakerd unnoticed).
/// - `-z pack-relative-relocs` (DT_RELR, glibc 2.36+, Debian 12): the ~51,000 relative
///   relocations of the position-independent image take 10 KB instead of 1.2 MB, all of it read
///   at every start.
/// - `--no-export-dynamic`: `-static-stdlib` exports every symbol of the image (for `dlsym` on
///   its own symbols, which speakerd never does).
/// lld takes the first archive on the command line that defines a symbol, so Foundation must not
/// be on it at all, or a specialisation both Foundation and FoundationEssentials define would pull
/// Foundation back in.
let speakerdImage: [LinkerSetting] = [.unsafeFlags([
    "-static-stdlib",
    "-use-ld=lld",
    "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
    "-Xlinker", "--no-export-dynamic",
    "-Xlinker", "--start-group",
    "-lFoundationEssentials", "-l_FoundationICU", "-l_FoundationCShims", "-l_FoundationCollections",
    "-lswiftSynchronization", "-lswiftDispatch", "-ldispatch", "-lBlocksRuntime",
    "-Xlinker", "--end-group",
])]

/// No autolink of Foundation into speakerd's image (see `speakerdImage`): a Foundation-only call
/// now fails speakerd's link instead of silently bringing libFoundation, CoreFoundation and ICU
/// back into the daemon. For the executables only; the library stays free of unsafe flags.
let noFoundation: [SwiftSetting] = [.unsafeFlags([
    "-Xfrontend", "-disable-autolink-library", "-Xfrontend", "Foundation",
    "-Xfrontend", "-disable-autolink-library", "-Xfrontend", "FoundationInternationalization",
])]

/// speakerd: a Bluetooth-speaker companion daemon (`speakerd`) and its CLI (`composer-cli`).
///
/// Everything with logic lives in the library modules (docs/ARCHITECTURE.md); the executables
/// only parse, wire and run.
/// C libraries are reached through their own C modules (CDBus, CBlueZ, CFluidSynth, CPulse), each imported
/// by the one module that wraps it, and never leak past it.
let package = Package(
    name: "speakerd",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Daemon", targets: ["Daemon"]),
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
        .package(url: "https://github.com/pointfreeco/swift-custom-dump", from: "1.3.0"),
        // CustomDump reports through IssueReporting, which reaches Swift Testing only with this linked.
        .package(url: "https://github.com/pointfreeco/xctest-dynamic-overlay", from: "1.5.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.0"),
    ],
    targets: [
        // libdbus-1 and libbluetooth, from Debian's libdbus-1-dev and libbluetooth-dev, found
        // through pkg-config and linked shared, as Debian expects: a security update of either
        // reaches speakerd at once. Each C library has its own shim, imported by one module only.
        .systemLibrary(
            name: "CDBus",
            pkgConfig: "dbus-1",
            providers: [.apt(["libdbus-1-dev", "pkg-config"])]
        ),
        .systemLibrary(
            name: "CBlueZ",
            pkgConfig: "bluez",
            providers: [.apt(["libbluetooth-dev", "pkg-config"])]
        ),
        // libpulse, the PulseAudio protocol (which PipeWire's pipewire-pulse speaks too), for the
        // speaker's sink on the sound server: opened with dlopen on first use, as FluidSynth is
        // (see include/CPulse.h). libpulse-dev gives the headers; libpulse0 is needed at run time.
        .target(
            name: "CPulse",
            linkerSettings: [.linkedLibrary("dl")]
        ),
        // libfluidsynth, opened with dlopen on first use rather than linked: it pulls ~80 shared
        // libraries that speakerd's start-up must not pay for (see include/CFluidSynth.h).
        // fluidsynth.h (libfluidsynth-dev) gives the types; libfluidsynth3 is needed at run time.
        .target(
            name: "CFluidSynth",
            linkerSettings: [.linkedLibrary("dl")]
        ),
        // The MIDI file reader: pure Swift, no C and nothing of the daemon (fuzzed on its own).
        .target(
            name: "MIDI",
            dependencies: [.product(name: "SystemPackage", package: "swift-system")],
            path: "Sources/SpeakerCore/MIDI"
        ),
        // The async primitives every layer uses: one-shot signals (a value or failure that many
        // may wait for), timeboxes, the stopwatch, and the one fan-out type (Broadcaster).
        .target(name: "AsyncSignals", path: "Sources/SpeakerCore/AsyncSignals"),
        // The D-Bus binding over libdbus-1: connections, messages, typed values, exported objects.
        .target(
            name: "DBus",
            dependencies: ["AsyncSignals", "CDBus"],
            path: "Sources/SpeakerCore/DBus"
        ),
        // The BlueZ client (org.bluez over the DBus module), Bluetooth addresses and the kernel's
        // controller list (libbluetooth, through CBlueZ).
        .target(
            name: "BlueZ",
            dependencies: [
                "AsyncSignals",
                "DBus",
                "CBlueZ",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
            ],
            path: "Sources/SpeakerCore/BlueZ"
        ),
        // Readiness and operations: the readiness gate (ordered levels that drop and rise, of any
        // Comparable type its owner brings), the operation queue and the start-up sequencer over
        // a graph of operations. Knows nothing of Bluetooth, D-Bus or audio: the daemon's levels
        // are SpeakerdAPI's DaemonReadiness.
        .target(
            name: "Readiness",
            dependencies: [
                "AsyncSignals",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Collections", package: "swift-collections"),
            ],
            path: "Sources/SpeakerCore/Readiness"
        ),
        // systemd's side of the service: sd_notify (READY=1, STATUS=, WATCHDOG=1) over
        // NOTIFY_SOCKET, the watchdog's pacing, and the journal's log handler.
        .target(
            name: "Systemd",
            dependencies: [
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Sources/SpeakerCore/Systemd"
        ),
        // logind's side of sleep: the sleep delay lock held while speaker operations run (so a
        // suspend waits for a connect to finish), and PrepareForSleep as events (reconnect on
        // resume). Over the DBus module; knows nothing of speakers beyond the operation queue.
        .target(
            name: "Logind",
            dependencies: [
                "DBus",
                "Readiness",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/SpeakerCore/Logind"
        ),
        // The sound server's side over libpulse (CPulse, opened with dlopen): the sink and card
        // watcher behind sink-level readiness, and short requests (a sink's volume, a card's
        // profile). PulseAudio and PipeWire's pipewire-pulse both speak it.
        .target(
            name: "PulseAudio",
            dependencies: ["AsyncSignals", "CPulse"],
            path: "Sources/SpeakerCore/PulseAudio"
        ),
        // One song's sound: the FluidSynth engine (CFluidSynth), the paced render loop, the audio
        // outputs (ALSA, PulseAudio, WAV file, null) and the playback engine that drives them.
        // A speaker's sink gets a stream of speakerd's own (PulseAudio's `PulseStream`), which the
        // server ends rather than moves when the sink goes away. Knows nothing of speakers,
        // readiness or the daemon.
        .target(
            name: "Playback",
            dependencies: [
                "AsyncSignals",
                "MIDI",
                "PulseAudio",
                "CFluidSynth",
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            path: "Sources/SpeakerCore/Playback"
        ),
        // Where a speaker's sound goes under `audio_output`: the `AudioBackend` seam and one file per
        // backend (BlueALSA's PCMs on the system bus, the speaker's sink on a sound server, ALSA, a
        // file, null, `auto`), each following the path to a speaker as a stream of states whose
        // `ready` carries the route, opening a song's output on that route, and giving the speaker's
        // volume there. Knows nothing of the daemon: the daemon turns a problem into its readiness reason.
        .target(
            name: "AudioPath",
            dependencies: [
                "AsyncSignals",
                "DBus",
                "BlueZ",
                "Playback",
                "PulseAudio",
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            path: "Sources/SpeakerCore/AudioPath"
        ),
        // speakerd's player: one actor owning the queue and the play/pause/stop state machine behind
        // the daemon's playback port (`DaemonPlayback`), each song a `PlaybackSession` with the
        // output opened on the route the daemon hands over, readiness-gated, its snapshots the one
        // playback status type. The daemon tells it the speaker, the ready route and the readiness
        // reason; it follows no audio path itself.
        .target(
            name: "PlaybackService",
            dependencies: [
                "AsyncSignals",
                "DBus",
                "BlueZ",
                "MIDI",
                "Readiness",
                "Playback",
                "AudioPath",
                "SpeakerdAPI",
                "Configuration",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Collections", package: "swift-collections"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            path: "Sources/SpeakerCore/PlaybackService"
        ),
        // speakerd's D-Bus API, both sides of it: the `SpeakerdControl` protocol, the wire records
        // and reports (the stable `--json` keys), the daemon's readiness levels (`DaemonReadiness`,
        // the wire's `readiness`, which the daemon and the player gate work on), the client
        // composer-cli uses and the exported object the daemon serves, with its request limits.
        .target(
            name: "SpeakerdAPI",
            dependencies: [
                "AsyncSignals",
                "DBus",
                "BlueZ",
                "MIDI",
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            path: "Sources/SpeakerCore/SpeakerdAPI"
        ),
        // What speakerd is told and what it remembers, as files: the config file and its parser,
        // the flags and environment merged over it (`DaemonOptions.resolve`), and the format of
        // `state.json` (the known speakers). composer-cli's doctor reads both without the daemon.
        .target(
            name: "Configuration",
            dependencies: [
                "AsyncSignals",
                "BlueZ",
                "Playback",
                "AudioPath",
                "SpeakerdAPI",
            ],
            path: "Sources/SpeakerCore/Configuration"
        ),
        // The daemon: start-up as a graph of operations, the speaker link and reconnects, readiness
        // derived from what it observes (bus, adapter, link, audio path, soundfont), the state
        // file, logind, status publishing and the API's methods; it wires the player and serves
        // `SpeakerdControl`. Imports no C module.
        .target(
            name: "Daemon",
            dependencies: [
                "AsyncSignals",
                "DBus",
                "BlueZ",
                "Readiness",
                "Systemd",
                "Logind",
                "Playback",
                "AudioPath",
                "PlaybackService",
                "SpeakerdAPI",
                "Configuration",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            path: "Sources/SpeakerCore/Daemon",
        ),
        // composer-cli's logic, so its executable only parses and wires: the doctor (local probes,
        // the sound stack, the running daemon's view), the scan picker, the start-up charts, the
        // play waiter and progress line. It reads the daemon's configuration and state files to
        // diagnose them through the Configuration module; it never sees the daemon.
        .target(
            name: "ComposerCLIKit",
            dependencies: [
                "AsyncSignals",
                "DBus",
                "BlueZ",
                "Playback",
                "AudioPath",
                "SpeakerdAPI",
                "Configuration",
            ],
            path: "Sources/SpeakerCore/ComposerCLIKit"
        ),
        .executableTarget(
            name: "speakerd",
            dependencies: [
                "Daemon",
                "Configuration",
                "SpeakerdAPI",
                "Systemd",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: noFoundation,
            linkerSettings: speakerdImage
        ),
        .executableTarget(
            name: "composer-cli",
            dependencies: [
                "AsyncSignals",
                "BlueZ",
                "MIDI",
                "Playback",
                "SpeakerdAPI",
                "Configuration",
                "ComposerCLIKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: noFoundation,
            linkerSettings: speakerdImage
        ),

        // Shared by the test targets: the private dbus-daemon + fake BlueZ harness, the in-process
        // fake BlueZ client, the logind and BlueALSA mocks, private sound servers, stand-ins for
        // systemd's notify socket and for speakerd's API, songs as clients send them, a sound device
        // driven by hand, WAV analysis, bounded waits, a seeded RNG. Test doubles live here, never
        // in a product.
        .target(
            name: "TestSupport",
            dependencies: [
                "AsyncSignals", "DBus", "BlueZ", "Logind", "MIDI", "Playback", "SpeakerdAPI",
                .product(name: "Clocks", package: "swift-clocks"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            path: "Sources/TestSupport"
        ),

        // Benchmarks: run in release builds (`scripts/bench`), figures in docs/BENCHMARKS.md.
        .executableTarget(name: "bench-dbus", dependencies: ["DBus", "CDBus"], path: "Benchmarks/bench-dbus"),
        .executableTarget(name: "bench-song-memory", dependencies: ["MIDI", "Playback"], path: "Benchmarks/bench-song-memory"),
        .executableTarget(name: "bench-readiness", dependencies: ["AsyncSignals", "Readiness", "SpeakerdAPI"], path: "Benchmarks/bench-readiness"),
        .executableTarget(name: "bench-playback", dependencies: ["AsyncSignals", "MIDI", "Playback", "Daemon"], path: "Benchmarks/bench-playback"),
        .executableTarget(name: "bench-startup", dependencies: ["DBus", "Daemon", "Configuration"], path: "Benchmarks/bench-startup",
                         swiftSettings: noFoundation, linkerSettings: speakerdImage),

        // A test target per module (docs/ARCHITECTURE.md); DaemonTests holds what needs the daemon,
        // composer-cli or the real programs.
        .testTarget(
            name: "AsyncSignalsTests",
            dependencies: ["AsyncSignals", "TestSupport", .product(name: "Clocks", package: "swift-clocks")]
        ),
        .testTarget(name: "DBusTests", dependencies: ["AsyncSignals", "DBus", "TestSupport"]),
        .testTarget(
            name: "ReadinessTests",
            dependencies: ["AsyncSignals", "Readiness", "TestSupport", .product(name: "Clocks", package: "swift-clocks")]
        ),
        .testTarget(
            name: "BlueZTests",
            dependencies: ["AsyncSignals", "DBus", "BlueZ", "TestSupport", .product(name: "Clocks", package: "swift-clocks")]
        ),
        .testTarget(name: "PulseAudioTests", dependencies: ["PulseAudio", "TestSupport"]),
        .testTarget(
            name: "SystemdTests",
            dependencies: [
                "Systemd", "TestSupport",
                .product(name: "Logging", package: "swift-log"), .product(name: "Clocks", package: "swift-clocks"),
            ]
        ),
        .testTarget(
            name: "AudioPathTests",
            dependencies: ["DBus", "BlueZ", "PulseAudio", "Playback", "AudioPath", "TestSupport", .product(name: "Clocks", package: "swift-clocks")]
        ),
        .testTarget(
            name: "LogindTests",
            dependencies: ["DBus", "Readiness", "Logind", "TestSupport", .product(name: "PropertyBased", package: "swift-property-based")]
        ),
        .testTarget(
            name: "SpeakerdAPITests",
            dependencies: [
                "MIDI",
                "DBus", "BlueZ", "SpeakerdAPI", "TestSupport",
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        .testTarget(name: "MIDITests", dependencies: ["MIDI", "TestSupport"]),
        .testTarget(
            name: "PlaybackTests",
            dependencies: ["MIDI", "AsyncSignals", "BlueZ", "Playback", "TestSupport", .product(name: "Clocks", package: "swift-clocks")]
        ),
        .testTarget(
            name: "PlaybackServiceTests",
            dependencies: [
                "AsyncSignals", "DBus", "BlueZ", "MIDI", "Readiness", "Systemd", "Playback", "AudioPath", "PlaybackService", "Configuration", "SpeakerdAPI", "TestSupport",
                .product(name: "Logging", package: "swift-log"), .product(name: "Clocks", package: "swift-clocks"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "CustomDump", package: "swift-custom-dump"),
                .product(name: "IssueReportingTestSupport", package: "xctest-dynamic-overlay"),
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "ComposerCLIKitTests",
            dependencies: [
                "AsyncSignals", "DBus", "Playback", "AudioPath", "SpeakerdAPI", "Configuration", "ComposerCLIKit", "TestSupport",
                .product(name: "Clocks", package: "swift-clocks"),
            ]
        ),
        .testTarget(
            name: "DaemonTests",
            dependencies: ["MIDI", "AsyncSignals", "DBus", "BlueZ", "Readiness", "Systemd", "Logind", "Playback", "AudioPath", "PlaybackService", "SpeakerdAPI", "Configuration", "Daemon", "ComposerCLIKit", "TestSupport", .product(name: "Clocks", package: "swift-clocks"),
                           .product(name: "CustomDump", package: "swift-custom-dump"),
                           .product(name: "IssueReportingTestSupport", package: "xctest-dynamic-overlay"),
                           .product(name: "PropertyBased", package: "swift-property-based")]
        ),
    ],
    swiftLanguageModes: [.v6]
)

/// The AddressSanitizer build (`scripts/leak-check`, with `SPEAKERD_SANITIZED_BUILD=1`) holds only
/// the modules that call C (libdbus, libpulse, FluidSynth, the MIDI reader over raw bytes) and
/// those their tests and the test support need, with those tests: memory errors and leaks live
/// where C is called, and the daemon's modules, its executables and the benchmarks were most of
/// that build's time (the daemon's tests run on the ordinary debug build).
if Context.environment["SPEAKERD_SANITIZED_BUILD"] == "1" {
    let sanitized: Set<String> = [
        "CDBus", "CBlueZ", "CPulse", "CFluidSynth",
        "AsyncSignals", "DBus", "BlueZ", "PulseAudio", "MIDI", "Playback", "Readiness", "Logind", "Systemd", "SpeakerdAPI",
        "TestSupport",
        "AsyncSignalsTests", "DBusTests", "BlueZTests", "PulseAudioTests", "MIDITests", "PlaybackTests", "ReadinessTests",
        "LogindTests", "SystemdTests", "SpeakerdAPITests",
    ]
    package.targets.removeAll { !sanitized.contains($0.name) }
    package.products.removeAll()
}
