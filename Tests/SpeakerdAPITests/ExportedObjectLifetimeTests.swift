import Foundation
@testable import SpeakerdAPI
import TestSupport
import Testing

/// The exported object holds its control weakly: a daemon it serves is freed once let go (the
/// daemon's side is DaemonTests' DaemonLifetimeTests), and a call that arrives after that is
/// refused, not a crash.
extension SpeakerdAPITests {
    @Test("a call that reaches the exported object after its daemon is gone gets NotReady, not a crash")
    func callAfterDaemonIsGone() async throws {
        let world = try await FakeBusWorld.start(bluez: false)
        let server = try await world.connect()
        defer { server.close() }
        weak var released: RecordingControl?
        do {
            let control = RecordingControl()
            released = control
            // The object alone must not keep its control alive.
            let object = try SpeakerdDBusObject.make(serving: control, initial: control.statusReport)
            try server.export(object, at: SpeakerdBus.path)
        }
        #expect(released == nil, "the exported object keeps its control alive")
        try await server.requestName(SpeakerdBus.name)
        let client = SpeakerdDBusClient(connection: try await world.connect())
        let error = await #expect(throws: SpeakerdError.self) { _ = try await client.status() }
        #expect(error == .rejected(name: SpeakerdBus.ErrorName.notReady, message: "speakerd is shutting down"))
        _ = world
    }
}
