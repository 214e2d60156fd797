import BlueZ
import DBus
import Foundation
import Synchronization
import TestSupport

/// The sound server's half of a Bluetooth speaker, as PipeWire's bluez5 monitor and PulseAudio's
/// module-bluez5-discover play it: the speaker's sink appears when the fake BlueZ device connects
/// and goes when it disconnects, whoever connected or disconnected it.
///
/// `Connected` is followed by its PropertiesChanged signals, which are the truth on the fake bus:
/// python-dbusmock's stock `Device1.Connect` emits the change but leaves the stored property
/// false. The stored value is read once, after subscribing, only to start from the right state.
/// Changes are handled one at a time, in the order the bus delivered them.
final class BluetoothSinkFollower: Sendable {
    /// What the harness did on the server, in order: `loaded NAME` and `unloaded NAME`, or the
    /// failure of a load or unload (then the follower stops, and `failure` says why).
    var actions: [String] { state.withLock { $0.actions } }
    /// The speaker's sink while the device is connected; nil while it is not.
    var sink: BluetoothSink? { state.withLock { $0.sink } }
    /// Why following stopped early (a pactl or bus failure), if it did.
    var failure: String? { state.withLock { $0.failure } }
    /// True while a load or unload is under way: the server may already show the change (speakerd
    /// may already have seen the sink) before `sink` says so.
    var isChanging: Bool { state.withLock { $0.changing } }

    private struct State {
        var changing = false
        var sink: BluetoothSink?
        var actions: [String] = []
        var failure: String?
    }

    private let state = Mutex(State())
    private let task = Mutex<Task<Void, Never>?>(nil)
    private let connection: DBusConnection

    private init(connection: DBusConnection) {
        self.connection = connection
    }

    /// Starts following the device `address` on adapter hci0 of `world`, loading a sink named
    /// `sinkName` on `server` whenever it is connected. Returns once the subscription is on the bus
    /// and the starting state is in place (the sink loaded if the device is connected already).
    static func follow(_ address: String, on world: FakeBusWorld, loadingOn server: PulseAudioServer,
                       sinkName: String = "bluez_sink_x") async throws -> BluetoothSinkFollower {
        let connection = try await world.connect()
        let follower = BluetoothSinkFollower(connection: connection)
        let device = try DBusObjectPath("/org/bluez/hci0/\(try BluetoothAddress(address).devicePathElement)")
        let changes = try await connection.signals(matching: DBusMatchRule(
            sender: "org.bluez", path: device, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
            arguments: [0: "org.bluez.Device1"]))
        let stored = try? await connection.call(destination: "org.bluez", path: device, interface: "org.freedesktop.DBus.Properties",
                                                method: "Get", arguments: [.string("org.bluez.Device1"), .string("Connected")])
        if let stored, case .bool(true) = stored.first?.unwrappingVariants {
            await follower.apply(connected: true, address: address, sinkName: sinkName, server: server)
        }
        follower.task.withLock { $0 = Task {
            for await signal in changes {
                guard let changed = try? signal.arguments.decode([String: DBusValue].self, at: 1),
                      let connected = try? changed.decode("Connected", as: Bool.self) else { continue }
                await follower.apply(connected: connected, address: address, sinkName: sinkName, server: server)
                if follower.failure != nil { break }
            }
        } }
        return follower
    }

    /// Loads the sink on a connection, unloads it on a disconnection; a repeated value (the
    /// stored property and the first signal can agree) changes nothing.
    private func apply(connected: Bool, address: String, sinkName: String, server: PulseAudioServer) async {
        let current = sink
        state.withLock { $0.changing = true }
        defer { state.withLock { $0.changing = false } }
        do {
            if connected, current == nil {
                let added = try await server.addBluetoothSink(address: address, name: sinkName)
                state.withLock {
                    $0.sink = added
                    $0.actions.append("loaded \(added.name)")
                }
            } else if !connected, let current {
                try await server.remove(current)
                state.withLock {
                    $0.sink = nil
                    $0.actions.append("unloaded \(current.name)")
                }
            }
        } catch {
            state.withLock {
                $0.failure = "\(connected ? "loading" : "unloading") the speaker's sink failed: \(error)"
                $0.actions.append($0.failure!)
            }
        }
    }

    /// Stops following (the sink stays as it is) and closes the follower's bus connection.
    func stop() async {
        let running = task.withLock { $0 }
        running?.cancel()
        connection.close()
        await running?.value
    }
}
