@testable import BlueZ
import Foundation
@testable import Daemon
import TestSupport
import Testing

@Suite("Known-speaker state on disk")
struct StateStoreTests {
    let flip = try! BluetoothAddress("11:22:33:AA:BB:CC")
    let boom = try! BluetoothAddress("22:33:44:BB:CC:DD")
    let monday = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("a first run finds no file and an empty list")
    func firstRun() async {
        let directory = TemporaryDirectory()
        let store = StateStore(directory: directory.path)
        #expect(await store.load() == .firstRun)
        #expect(await store.knownSpeakers.isEmpty)
    }

    @Test("connections are remembered across restarts, last connected first, first date kept")
    func rememberedAcrossRestarts() async throws {
        let directory = TemporaryDirectory()
        let store = StateStore(directory: directory.path)
        await store.load()
        try await store.recordConnection(to: flip, name: "JBL Flip 5", at: monday)
        try await store.recordConnection(to: boom, name: "UE Boom", at: monday.addingTimeInterval(60))
        try await store.recordConnection(to: flip, name: "Flip", at: monday.addingTimeInterval(120))

        let restarted = StateStore(directory: directory.path)
        #expect(await restarted.load() == .loaded(speakerCount: 2))
        let speakers = await restarted.knownSpeakers
        #expect(speakers.map(\.address) == [flip, boom])
        #expect(speakers[0].name == "Flip")
        #expect(speakers[0].firstConnected == monday)
        #expect(speakers[0].lastConnected == monday.addingTimeInterval(120))
        #expect(directory.read("state.json")?.contains("\"version\" : 1") == true)
    }

    @Test("forgetting a speaker removes it from disk; forgetting an unknown one says so")
    func forget() async throws {
        let directory = TemporaryDirectory()
        let store = StateStore(directory: directory.path)
        await store.load()
        try await store.recordConnection(to: flip, name: "JBL Flip 5", at: monday)
        #expect(try await store.forget(flip))
        #expect(try await store.forget(boom) == false)
        let restarted = StateStore(directory: directory.path)
        #expect(await restarted.load() == .loaded(speakerCount: 0))
    }

    @Test("a corrupt file is set aside with a timestamp and the daemon carries on as a first run")
    func corruptFileSetAside() async throws {
        let directory = TemporaryDirectory()
        directory.write("{\"version\": 1, \"speakers\": [{\"address\": \"not-an-addr", to: "state.json")
        let store = StateStore(directory: directory.path)
        let outcome = await store.load(now: monday)
        guard case .setAside(let reason, let movedTo) = outcome else {
            Issue.record("expected the file to be set aside, got \(outcome)")
            return
        }
        #expect(reason.contains("not a speakerd state file") || reason.contains("malformed"))
        #expect(movedTo == directory.path + "/state.json.corrupt-20270115T080000Z")
        #expect(directory.entries() == ["state.json.corrupt-20270115T080000Z"])
        #expect(directory.read("state.json.corrupt-20270115T080000Z")?.hasPrefix("{\"version\": 1") == true)
        #expect(await store.knownSpeakers.isEmpty)
        // The store still works: the next connection writes a fresh file.
        try await store.recordConnection(to: flip, name: "JBL Flip 5", at: monday)
        #expect(await StateStore(directory: directory.path).load() == .loaded(speakerCount: 1))
    }

    @Test("a state directory that is a file: the outcome says the state is unusable and was not moved aside, never that it was")
    func stateDirectoryIsAFile() async throws {
        let root = TemporaryDirectory()
        root.write("not a directory", to: "state")
        let store = StateStore(directory: root.path + "/state")
        let outcome = await store.load(now: monday)
        guard case .unusable(let reason, let notMoved) = outcome else {
            Issue.record("expected unusable and not moved, got \(outcome)")
            return
        }
        #expect(reason.contains("Not a directory") || reason.contains("not a directory"), "\(reason)")
        #expect(notMoved == "Not a directory")
        #expect(!outcome.description.contains("moved to"), "\(outcome)")
        #expect(root.entries() == ["state"], "nothing may be made beside it")
        #expect(await store.knownSpeakers.isEmpty)
    }

    @Test("a bad address inside valid JSON is corruption too, and two set-asides do not collide")
    func badAddressAndTwoSetAsides() async {
        let directory = TemporaryDirectory()
        let bad = "{\"version\":1,\"speakers\":[{\"address\":\"zz\",\"name\":\"x\",\"firstConnected\":\"2027-01-15T08:00:00Z\",\"lastConnected\":\"2027-01-15T08:00:00Z\"}]}"
        directory.write(bad, to: "state.json")
        guard case .setAside(let reason, _) = await StateStore(directory: directory.path).load(now: monday) else {
            Issue.record("expected set-aside"); return
        }
        #expect(reason.contains("'zz' is not a Bluetooth address"))
        directory.write(bad, to: "state.json")
        _ = await StateStore(directory: directory.path).load(now: monday)
        #expect(directory.entries() == ["state.json.corrupt-20270115T080000Z", "state.json.corrupt-20270115T080000Z-2"])
    }

    @Test("a file from a newer speakerd is kept aside, not overwritten")
    func newerVersion() async throws {
        let directory = TemporaryDirectory()
        directory.write("{\"version\": 7, \"speakers\": [], \"future\": true}", to: "state.json")
        let store = StateStore(directory: directory.path)
        guard case .setAside(let reason, let movedTo) = await store.load(now: monday) else {
            Issue.record("expected set-aside"); return
        }
        #expect(reason == "written by a newer speakerd (state version 7, this one reads up to 1)")
        #expect(directory.read(String(movedTo.split(separator: "/").last!)) == "{\"version\": 7, \"speakers\": [], \"future\": true}")
    }

    @Test("a temp file left by a crash mid-write is ignored and cleaned up; the old state wins")
    func crashLeftovers() async throws {
        let directory = TemporaryDirectory()
        let store = StateStore(directory: directory.path)
        await store.load()
        try await store.recordConnection(to: flip, name: "JBL Flip 5", at: monday)
        // A crash after creating the temp file but before the rename leaves half a file behind.
        directory.write("{\"version\": 1, \"speak", to: ".state.json.tmp-4242-17")
        let restarted = StateStore(directory: directory.path)
        #expect(await restarted.load() == .loaded(speakerCount: 1))
        #expect(await restarted.knownSpeakers.first?.address == flip)
        #expect(directory.entries() == ["state.json"])
    }

    @Test("writes leave no temp files behind and create a missing state directory")
    func writesAreClean() async throws {
        let parent = TemporaryDirectory()
        let store = StateStore(directory: parent.path + "/speakerd")
        await store.load()
        try await store.recordConnection(to: flip, name: "JBL Flip 5", at: monday)
        try await store.recordConnection(to: boom, name: "UE Boom", at: monday)
        #expect(try FileManager.default.contentsOfDirectory(atPath: parent.path + "/speakerd") == ["state.json"])
    }

    @Test("a write that cannot happen throws a clear error, keeps the speaker in memory, and writes it once it can")
    func failedWrite() async throws {
        let directory = TemporaryDirectory()
        let store = StateStore(directory: directory.path + "/missing/deeper")
        await store.load()
        let error = await #expect(throws: StateStoreError.self) {
            try await store.recordConnection(to: flip, name: "JBL Flip 5", at: monday)
        }
        #expect(error?.description.contains("create directory") == true)
        #expect(await store.knownSpeakers.map(\.address) == [flip], "the daemon goes on with what it knows")
        #expect(await store.hasUnsavedChanges)
        await #expect(throws: StateStoreError.self) { try await store.savePending() }

        try FileManager.default.createDirectory(atPath: directory.path + "/missing", withIntermediateDirectories: false)
        try await store.savePending()
        #expect(await !store.hasUnsavedChanges)
        let reloaded = StateStore(directory: directory.path + "/missing/deeper")
        await reloaded.load()
        #expect(await reloaded.knownSpeakers.map(\.address) == [flip], "the retried write reached the disk")
    }

    @Test("the start-up log says what loading found in words", arguments: [
        (StateStore.LoadOutcome.firstRun, "no state file yet (first run)"),
        (.loaded(speakerCount: 1), "1 known speaker"),
        (.loaded(speakerCount: 3), "3 known speakers"),
        (.setAside(reason: "not JSON", movedTo: "/var/lib/speakerd/state.json.corrupt-1"),
         "unusable (not JSON); moved to /var/lib/speakerd/state.json.corrupt-1, starting as on a first run"),
    ])
    func outcomeDescription(outcome: StateStore.LoadOutcome, text: String) {
        #expect("\(outcome)" == text)
    }
}
