import AudioPath
@testable import BlueZ
import Clocks
import Foundation
import Logging
@testable import Daemon
import Synchronization
import TestSupport
import Testing

/// The daemon's features own their timers and followers and report through one inbox; the
/// daemon winding down winds them down, so nothing they started outlives it.
@Suite("The daemon's features: one inbox in, wound down with the daemon")
struct DaemonFeaturesTests {
    /// Every report the inbox hands on, in order.
    final class Reports: Sendable {
        let seen = Mutex<[String]>([])
        func record(_ report: FeatureReport) {
            let name = switch report {
            case .audioPath: "audioPath"
            case .statusChanged: "statusChanged"
            case .systemSleep: "systemSleep"
            case .busLost: "busLost"
            case .bluez: "bluez"
            case .playback: "playback"
            }
            seen.withLock { $0.append(name) }
        }
        var statusChanges: Int { seen.withLock { $0.filter { $0 == "statusChanged" }.count } }
    }

    /// The wiring on real files (the schedule and the words are `StateFileHealthTests`').
    @Test("a state directory that cannot be written: the problem is reported, the write retried until it works, and reported again once it does")
    func stateWriteRetried() async throws {
        let root = TemporaryDirectory()
        // A file where the state directory should be: no write can succeed, even as root.
        root.write("not a directory", to: "state")
        let clock = TestClock<Duration>()
        let reports = Reports()
        let inbox = FeatureInbox()
        inbox.connect { reports.record($0) }
        let feature = StateFileFeature(directory: root.path + "/state", inbox: inbox, clock: ErasedClock(clock), logger: Logger(label: "test.state"))
        _ = await feature.store.load(now: Date())
        let speaker = try BluetoothAddress("11:22:33:AA:BB:CC")

        let isNew = await feature.recordConnection(to: speaker, name: "JBL Flip 5", at: Date())
        #expect(isNew)
        let problem = try #require(await feature.problem)
        #expect(problem.hasPrefix("speakers will not be remembered: "))
        #expect(reports.statusChanges == 1)

        // The directory is made: a retry writes the speaker, and the problem is gone from status.
        try FileManager.default.removeItem(atPath: root.path + "/state")
        try FileManager.default.createDirectory(atPath: root.path + "/state", withIntermediateDirectories: false)
        _ = try await clock.advance(by: .seconds(1), atMost: .seconds(70), until: "a retry writes the state file") {
            await feature.problem == nil
        }
        #expect(FileManager.default.fileExists(atPath: root.path + "/state/state.json"))
        #expect(reports.statusChanges == 2)
        #expect(await feature.knownSpeakers.map(\.address) == [speaker])
    }

    @Test("a volume remembered while the directory still cannot be written does not clear the problem: nothing was written")
    func unchangedVolumeIsNoWrite() async throws {
        let root = TemporaryDirectory()
        root.write("not a directory", to: "state")
        let reports = Reports()
        let inbox = FeatureInbox()
        inbox.connect { reports.record($0) }
        let feature = StateFileFeature(directory: root.path + "/state", inbox: inbox, clock: ErasedClock(TestClock<Duration>()),
                                       logger: Logger(label: "test.state"))
        _ = await feature.store.load(now: Date())
        let speaker = try BluetoothAddress("11:22:33:AA:BB:CC")
        _ = await feature.recordConnection(to: speaker, name: "JBL Flip 5", at: Date())
        #expect(await feature.problem != nil)

        // No volume known yet, then the same volume again: neither writes anything.
        await feature.rememberVolume(40, of: try BluetoothAddress("11:22:33:AA:BB:DD"))
        #expect(await feature.problem != nil, "a speaker not known is no write")
        await feature.rememberVolume(40, of: speaker)
        await feature.rememberVolume(40, of: speaker)
        #expect(await feature.problem != nil, "an unchanged volume is no write")
        #expect(reports.statusChanges == 1)
        await feature.stop()
    }

    @Test("reports sent before the daemon connects the inbox go nowhere; once connected, send returns after the reducer took the report in")
    func inboxHandsOnInOrder() async {
        let inbox = FeatureInbox()
        let reports = Reports()
        await inbox.send(.statusChanged)
        inbox.connect { report in
            await Task.yield()
            reports.record(report)
        }
        await inbox.send(.busLost)
        #expect(reports.seen.withLock { $0 } == ["busLost"], "send returned before the reducer took the report in")
        await inbox.send(.statusChanged)
        #expect(reports.seen.withLock { $0 } == ["busLost", "statusChanged"])
    }
}
