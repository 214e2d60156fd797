@testable import DBus
import Foundation
import Glibc
@testable import SpeakerdAPI
import Synchronization
import SystemPackage
import TestSupport
import Testing

/// A stand-in daemon whose `play` holds every request until its caller goes away (or the test
/// lets it go), like a request waiting for a speaker that never comes.
actor HoldingControl: StandInControl {
    private(set) var started = 0
    private(set) var cancelled = 0
    private(set) var namesSeen: [Int] = []
    let report = StatusReport(readiness: "starting", message: "Waiting", speaker: nil,
                              playback: .init(state: "idle", file: nil, positionSeconds: nil, durationSeconds: nil))
    nonisolated var standingReport: StatusReport { report }

    func play(_ request: PlayRequest) async throws(SpeakerdError) -> StatusReport {
        started += 1
        namesSeen.append(request.displayName.utf8.count)
        defer { try? request.file.close() }
        do { try await Task.sleep(for: .seconds(120)) } catch {
            cancelled += 1
            throw .rejected(name: SpeakerdBus.ErrorName.failed, message: "cancelled")
        }
        return report
    }
}

/// One pipe whose writer never closes: the read end goes to speakerd, the write end stays here.
final class NeverClosingPipe: Sendable {
    let readEnd: Int32
    let writeEnd: Int32
    init() throws {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw POSIXError(.EMFILE) }
        readEnd = ends[0]
        writeEnd = ends[1]
    }
    deinit {
        close(readEnd)
        close(writeEnd)
    }
}

/// Open descriptors of this process.
func openDescriptorCount() -> Int {
    ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).count
}

/// Local users in the speakerd group may call speakerd; a careless or hostile one must not be
/// able to take it down, fill its memory, or leave requests behind that play later.
@Suite("Hostile clients: bounded requests, bounded arguments, requests of departed clients cancelled", .serialized)
struct HostileClientTests {
    func serve(limits: SpeakerdRequestLimits) async throws -> (FakeBusWorld, HoldingControl, DBusConnection) {
        let world = try await FakeBusWorld.start(bluez: false)
        let control = HoldingControl()
        let server = try await world.connect()
        let object = try SpeakerdDBusObject.make(serving: control, initial: control.report, limits: limits)
        try server.export(object, at: SpeakerdBus.path)
        try await server.requestName(SpeakerdBus.name)
        return (world, control, server)
    }

    @Test("a flood of plays on never-closing pipes gets Busy past the bounds, and speakerd keeps answering status")
    func floodIsRefusedWithBusy() async throws {
        let (world, control, server) = try await serve(limits: SpeakerdRequestLimits(perClient: 4, total: 10))
        defer { server.close() }
        let flooders = try await (0..<4).asyncMap { _ in try await world.connect() }
        let pipes = try (0..<40).map { _ in try NeverClosingPipe() }
        let baseline = openDescriptorCount()
        let outcomes = Journal()
        let calls = Task {
            await withTaskGroup(of: Void.self) { group in
                for (index, pipe) in pipes.enumerated() {
                    let bus = flooders[index % flooders.count]
                    group.addTask {
                        do { try await rawPlay(bus, fd: pipe.readEnd, name: "flood-\(index).mid") } catch {
                            outcomes.withLock { $0.append("\(error)") }
                        }
                    }
                }
            }
        }
        // 40 calls from 4 clients: at most 4 each and 10 in all are held; the other 30 are told at once.
        try await eventually("every refused play has its answer") { outcomes.withLock { $0.count } == 30 }
        let refusals = outcomes.withLock { $0 }
        #expect(refusals.allSatisfy { $0.hasPrefix(SpeakerdBus.ErrorName.busy + ": busy:") }, "\(refusals.prefix(3))")
        // The refusals are answered on the I/O thread at once; the ten admitted handlers start
        // on their own tasks, a moment later on a loaded machine.
        try await eventually("the ten admitted plays are held") { await control.started == 10 }
        // Each held request keeps 3 descriptors in the daemon (the message's, the argument's, the
        // request's) and 2 in its client, which shares this process (its copy, the message's);
        // the refused ones keep none: 50, where 40 held calls would keep 200. The slack is for
        // the suites running beside this one in the same process, which open descriptors too.
        let open = openDescriptorCount()
        #expect(open <= baseline + 10 * 5 + 30, "\(open - baseline) descriptors more than before the flood")

        // Another client is still answered, and a new play of its own is admitted once one frees up.
        let bystander = SpeakerdDBusClient(connection: try await world.connect())
        #expect(try await bystander.status() == control.report)
        #expect(server.isConnected)

        // The flooders leave: their held requests are cancelled and their slots freed.
        for bus in flooders { bus.close() }
        try await eventually("the held requests are cancelled") { await control.cancelled == 10 }
        let pipe = try NeverClosingPipe()
        let late = Task { try await rawPlay(try await world.connect(), fd: pipe.readEnd, name: "late.mid", timeout: .seconds(5)) }
        try await eventually("a new play is admitted") { await control.started == 11 }
        late.cancel()
        calls.cancel()
        _ = world
    }

    @Test("a play whose client leaves the bus is cancelled in the daemon")
    func departedClientsPlayIsCancelled() async throws {
        let (world, control, server) = try await serve(limits: .default)
        defer { server.close() }
        let client = try await world.connect()
        let pipe = try NeverClosingPipe()
        let call = Task { try? await rawPlay(client, fd: pipe.readEnd, name: "song.mid") }
        try await eventually("the play is held") { await control.started == 1 }
        client.close()  // Ctrl-C on `composer-cli play --wait`
        try await eventually("the held play is cancelled") { await control.cancelled == 1 }
        call.cancel()
        _ = world
    }

    @Test("a 1 MiB display name is refused at once, and the error quotes only a short prefix")
    func hugeDisplayNameIsRefused() async throws {
        let (world, control, server) = try await serve(limits: .default)
        defer { server.close() }
        let bus = try await world.connect()
        let pipe = try NeverClosingPipe()
        let huge = String(repeating: "n", count: 1 << 20)
        let error = await #expect(throws: DBusError.self) { try await rawPlay(bus, fd: pipe.readEnd, name: huge) }
        guard case .remote(let name, let message)? = error else { Issue.record("expected a remote error"); return }
        #expect(name == DBusError.Name.invalidArgs)
        #expect(message.hasPrefix("the song's display name is 1048576 bytes long (at most 255): 'nnnn"))
        #expect(message.utf8.count < 200, "the error echoes \(message.utf8.count) bytes")
        // A 255-byte name is fine.
        let fine = Task { try? await rawPlay(bus, fd: pipe.readEnd, name: String(repeating: "é", count: 127)) }
        try await eventually("the play with a 254-byte name is taken") { await control.started == 1 }
        #expect(await control.namesSeen == [254])
        fine.cancel()
        bus.close()

        // Addresses too: a long one is refused before it is parsed, quoted briefly.
        let other = try await world.connect()
        let address = await #expect(throws: DBusError.self) {
            _ = try await other.call(destination: SpeakerdBus.name, path: SpeakerdBus.path, interface: SpeakerdBus.interface,
                                     method: "Forget", arguments: [.string(String(repeating: "A", count: 100_000))])
        }
        guard case .remote(_, let addressMessage)? = address else { Issue.record("expected a remote error"); return }
        #expect(addressMessage.hasPrefix("the address is 100000 bytes long (at most 32)"))
        #expect(addressMessage.utf8.count < 200)
        _ = world
    }

    @Test("error replies never carry more than a short text, whatever a handler put in them")
    func errorRepliesAreShort() async throws {
        let world = try await FakeBusWorld.start(bluez: false)
        let server = try await world.connect()
        defer { server.close() }
        let object = try DBusObject(interfaces: [DBusInterface("io.speakerd.Test", methods: [
            DBusMethod("Echo", inputs: [DBusArgument("text", "s")]) { context in
                throw DBusError.remote(name: "io.speakerd.Error.Failed", message: "no: " + (try context.argument(0, as: String.self)))
            },
        ])])
        try server.export(object, at: "/test")
        let client = try await world.connect()
        let error = await #expect(throws: DBusError.self) {
            _ = try await client.call(destination: server.uniqueName, path: "/test", interface: "io.speakerd.Test",
                                      method: "Echo", arguments: [.string(String(repeating: "ü", count: 100_000))])
        }
        guard case .remote(_, let message)? = error else { Issue.record("expected a remote error"); return }
        #expect(message.utf8.count <= DBusMessage.maxErrorMessageBytes)
        #expect(message.hasPrefix("no: üü") && message.hasSuffix("…"))
        _ = world
    }
}

extension Sequence {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
