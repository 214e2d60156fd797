#if canImport(FoundationEssentials)
import BlueZ
import DBus
import FoundationEssentials
import SpeakerdAPI
#else
import Foundation
#endif
import AudioPath
import Logging
import PlaybackService
import Configuration

/// Everything the coordinator reaches outside itself, injected so tests can swap each part:
/// an in-process fake BlueZ, a test clock, no bus at all, a fake playback engine.
public struct DaemonDependencies: Sendable {
    public var clock: any Clock<Duration>
    /// Wall-clock time, for the state file's timestamps only.
    public var now: @Sendable () -> Date
    /// Connects the bus the API is served on; nil serves no API (in-process tests).
    public var connectBus: (@Sendable (BusSelection) async throws -> DBusConnection)?
    /// Makes the BlueZ client (over the daemon's connection when there is one).
    public var makeBlueZ: @Sendable (DBusConnection?) async throws -> any BlueZClient
    /// The playback engine; nil (with no `makePlayback`) means this daemon cannot play (status says so).
    public var playback: (any DaemonPlayback)?
    /// Builds the playback side from the daemon's gate, clock and audio backend; used when
    /// `playback` is nil.
    public var makePlayback: (@Sendable (PlaybackWiring) -> any DaemonPlayback)?
    /// The way audio reaches the speaker (`audio_output`): the daemon follows its path, the
    /// player opens outputs on its routes. Followed only when the daemon has a playback side.
    public var audio: any AudioBackend

    public init(clock: any Clock<Duration> = ContinuousClock(), now: @escaping @Sendable () -> Date = Date.init,
                connectBus: (@Sendable (BusSelection) async throws -> DBusConnection)?,
                makeBlueZ: @escaping @Sendable (DBusConnection?) async throws -> any BlueZClient,
                playback: (any DaemonPlayback)? = nil,
                makePlayback: (@Sendable (PlaybackWiring) -> any DaemonPlayback)? = nil,
                audio: any AudioBackend = NullBackend()) {
        self.clock = clock
        self.now = now
        self.connectBus = connectBus
        self.makeBlueZ = makeBlueZ
        self.playback = playback
        self.makePlayback = makePlayback
        self.audio = audio
    }
}

extension DaemonDependencies {
    /// The real world: the configured bus, BlueZ over D-Bus, the player (readiness-gated songs on
    /// the FluidSynth engine, to the output `audio_output` picks for the speaker).
    public static func live(configuration: DaemonConfiguration, logger: Logger) -> DaemonDependencies {
        DaemonDependencies(
            connectBus: { bus in try await DBusConnection.connect(bus.busAddress) },
            makeBlueZ: { connection in
                guard let connection else { throw BlueZClientError.bus("no D-Bus connection") }
                // The pairing agent registers right after start rather than before the first
                // Connect, which a paired speaker does not need it for.
                return try await DBusBlueZClient.start(
                    connection: connection, configuration: .init(registersAgentInBackground: true), logger: logger)
            },
            makePlayback: { wiring in Player.live(configuration: configuration, gate: wiring.gate, audio: wiring.audio, clock: wiring.clock) },
            audio: configuration.audioOutput.backend(soundServers: configuration.soundServers))
    }
}
