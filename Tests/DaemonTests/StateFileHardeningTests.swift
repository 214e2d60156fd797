@testable import BlueZ
import Foundation
import Glibc
@testable import Daemon
import TestSupport
import Testing

/// `state.json` replaced by something that is not a plain file, or listing a speaker twice:
/// speakerd must start anyway, promptly, and know each speaker once.
@Suite("State file hardening: only a regular file is read, duplicates merged", .serialized)
struct StateFileHardeningTests {
    let flip = try! BluetoothAddress("11:22:33:AA:BB:CC")
    let monday = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("a FIFO in place of state.json is set aside at once, naming its kind, instead of blocking start-up")
    func fifoIsSetAside() async throws {
        let directory = TemporaryDirectory()
        #expect(mkfifo(directory.path + "/state.json", 0o600) == 0)
        let started = ContinuousClock.now
        let outcome = await StateStore(directory: directory.path).load(now: monday)
        #expect(ContinuousClock.now - started < .seconds(2))
        #expect(outcome == .setAside(reason: "it is a named pipe (FIFO), not a regular file",
                                     movedTo: directory.path + "/state.json.corrupt-20270115T080000Z"))
        #expect(directory.entries() == ["state.json.corrupt-20270115T080000Z"])
    }

    @Test("speakerd with a FIFO for state.json takes its bus name and answers status")
    func daemonStartsWithFIFO() async throws {
        let fake = try await DaemonWorld.start(bluez: false)
        #expect(mkfifo(fake.state.path + "/state.json", 0o600) == 0)
        let daemon = fake.makeDaemon()
        let started = daemon.startInBackground()
        try await eventually("start-up has finished", within: .seconds(10)) { started.isSet }
        let status = try await fake.client().status()
        #expect(status.readiness == "bus")
        #expect(fake.state.entries().contains { $0.hasPrefix("state.json.corrupt-") })
        await daemon.shutdown()
        _ = fake
    }

    @Test("a symbolic link in place of state.json is set aside, and what it points to is left alone")
    func symlinkIsSetAside() async throws {
        let directory = TemporaryDirectory()
        let elsewhere = TemporaryDirectory()
        let valid = #"{"version":1,"speakers":[]}"#
        elsewhere.write(valid, to: "target.json")
        #expect(symlink(elsewhere.path + "/target.json", directory.path + "/state.json") == 0)
        let outcome = await StateStore(directory: directory.path).load(now: monday)
        #expect(outcome == .setAside(reason: "it is a symbolic link, not a regular file",
                                     movedTo: directory.path + "/state.json.corrupt-20270115T080000Z"))
        #expect(elsewhere.read("target.json") == valid)
    }

    @Test("a directory in place of state.json is set aside too")
    func directoryIsSetAside() async throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.path + "/state.json", withIntermediateDirectories: false)
        let outcome = await StateStore(directory: directory.path).load(now: monday)
        guard case .setAside(let reason, _) = outcome else { Issue.record("expected set-aside, got \(outcome)"); return }
        #expect(reason == "it is a directory, not a regular file")
    }

    @Test("an address listed twice loads as one speaker: the most recent entry, with the first connection of both")
    func duplicatesMerged() async throws {
        let directory = TemporaryDirectory()
        directory.write("""
            {"version":1,"speakers":[
             {"address":"22:33:44:BB:CC:DD","name":"UE Boom","firstConnected":"2027-01-02T08:00:00Z","lastConnected":"2027-01-15T09:00:00Z"},
             {"address":"11:22:33:AA:BB:CC","name":"Old Flip","firstConnected":"2027-01-01T08:00:00Z","lastConnected":"2027-01-10T08:00:00Z"},
             {"address":"11:22:33:aa:bb:cc","name":"JBL Flip 5","firstConnected":"2027-01-05T08:00:00Z","lastConnected":"2027-01-14T08:00:00Z"}
            ]}
            """, to: "state.json")
        let store = StateStore(directory: directory.path)
        #expect(await store.load() == .loaded(speakerCount: 2))
        let speakers = await store.knownSpeakers
        #expect(speakers.map(\.address.description) == ["22:33:44:BB:CC:DD", "11:22:33:AA:BB:CC"])
        #expect(speakers[1].name == "JBL Flip 5")
        #expect(speakers[1].firstConnected == ISO8601DateFormatter().date(from: "2027-01-01T08:00:00Z"))
        #expect(speakers[1].lastConnected == ISO8601DateFormatter().date(from: "2027-01-14T08:00:00Z"))
        // Forgetting it forgets it: no second entry comes back.
        #expect(try await store.forget(flip))
        #expect(await StateStore(directory: directory.path).load() == .loaded(speakerCount: 1))
    }
}
