import DBus
import Foundation

import Synchronization

/// A private `dbus-daemon` with python-dbusmock's `bluez5` template on it: the test world
/// every D-Bus, BlueZ and daemon test runs in.
///
/// Each world is its own bus in its own temp dir, so tests run in parallel. It is run by
/// `scripts/fake-bluez`, which tears everything down when this object goes away, when `stop()`
/// is called, or when the test process dies (its stdin closes).
///
/// ```swift
/// let world = try await FakeBusWorld.start()          // bus + fake BlueZ
/// let bus = try await world.connect()                 // a DBusConnection to it
/// let objects = try await bus.call(destination: "org.bluez", path: "/",
///     interface: "org.freedesktop.DBus.ObjectManager", method: "GetManagedObjects")
/// try await world.restartBlueZ()                      // bluetoothd "restarts"
/// await world.stop()
/// ```
public final class FakeBusWorld: Sendable {
    /// The private bus's address, e.g. `unix:path=/tmp/fake-bluez.X/bus,guid=…`.
    public let address: String
    /// The same, for `DBusConnection.connect` and for `--bus` flags.
    public var bus: BusAddress { .address(address) }

    private let harness: FakeBusHarness

    private init(address: String, harness: FakeBusHarness) {
        self.address = address
        self.harness = harness
    }

    deinit { harness.terminate() }

    /// Starts a bus, and unless `bluez` is false the mock BlueZ on it.
    /// - Parameters:
    ///   - template: a dbusmock template name or a path to our own `.py` template (default `bluez5`).
    ///   - parameters: the template's JSON parameters, if any.
    ///   - serviceDirectory: a D-Bus activation directory: a `NAME.service` file there is started
    ///     by the bus when a client first calls NAME (how a request launches speakerd).
    public static func start(bluez: Bool = true, template: String? = nil, parameters: String? = nil,
                             serviceDirectory: String? = nil) async throws -> FakeBusWorld {
        var arguments: [String] = []
        if !bluez { arguments.append("--no-bluez") }
        if let serviceDirectory { arguments += ["--service-dir", serviceDirectory] }
        if let template { arguments += ["--template", template] }
        if let parameters { arguments += ["--parameters", parameters] }
        let harness = try FakeBusHarness(script: scriptPath, arguments: arguments)
        let first = await harness.nextLine()
        guard let address = first.text, address.hasPrefix("unix:") else {
            harness.terminate()
            if case .timedOut(let limit) = first {
                throw FakeBusWorldError.startFailed("no bus address within \(limit): \(harness.standardErrorTail())")
            }
            throw FakeBusWorldError.startFailed(harness.standardErrorTail())
        }
        return FakeBusWorld(address: address, harness: harness)
    }

    /// A new connection to this world's bus.
    public func connect() async throws -> DBusConnection {
        try await DBusConnection.connect(bus)
    }

    /// Stops the mock BlueZ (NameOwnerChanged: org.bluez loses its owner).
    public func stopBlueZ() async throws { try await command("stop-mock") }
    /// Starts the mock BlueZ again, with fresh stock state.
    public func startBlueZ() async throws { try await command("start-mock") }
    /// Starts another bluetoothd: the mock with `template` (a dbusmock name or a `.py` path), here
    /// and at every later start. Stop the running one first.
    public func startBlueZ(template: String) async throws { try await command("start-mock \(template)") }
    /// Stops and starts the mock: what a bluetoothd restart looks like on the bus.
    public func restartBlueZ() async throws { try await command("restart-mock") }

    /// Calls a method on the mock BlueZ's control interfaces, e.g. `AddAdapter` on
    /// `org.bluez.Mock` or `AddMethod` on `org.freedesktop.DBus.Mock`.
    public func mock(
        _ method: String, interface: String = "org.bluez.Mock", path: DBusObjectPath = "/",
        arguments: [DBusValue] = [], using connection: DBusConnection
    ) async throws -> [DBusValue] {
        try await connection.call(destination: "org.bluez", path: path, interface: interface, method: method, arguments: arguments)
    }

    /// Sends one of scripts/fake-bluez's person-facing commands (`add-speaker ADDR NAME`,
    /// `speaker-off ADDR`, …) and returns its one-line answer ("ok" or "error: …").
    public func send(_ line: String) async throws -> String {
        switch await harness.send(line) {
        case .text(let answer): return answer
        case .ended: throw FakeBusWorldError.commandFailed(line, "the harness exited")
        case .timedOut(let limit): throw FakeBusWorldError.commandFailed(line, "no answer within \(limit)")
        }
    }

    /// Tears down the mock and the bus and waits until both are gone.
    public func stop() async {
        await harness.stop()
    }

    private func command(_ line: String) async throws {
        switch await harness.send(line) {
        case .text("ok"): return
        case .text(let answer): throw FakeBusWorldError.commandFailed(line, answer)
        case .ended: throw FakeBusWorldError.commandFailed(line, "the harness exited")
        case .timedOut(let limit): throw FakeBusWorldError.commandFailed(line, "no answer within \(limit)")
        }
    }

    /// `scripts/fake-bluez` in this checkout (override with SPEAKERD_FAKE_BLUEZ).
    static var scriptPath: String {
        if let override = ProcessInfo.processInfo.environment["SPEAKERD_FAKE_BLUEZ"] { return override }
        return URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("scripts/fake-bluez").path
    }
}

public enum FakeBusWorldError: Error, CustomStringConvertible {
    case startFailed(String)
    case commandFailed(String, String)

    public var description: String {
        switch self {
        case .startFailed(let why): "the fake bus did not start: \(why)"
        case .commandFailed(let command, let why): "fake-bluez \(command) failed: \(why)"
        }
    }
}
