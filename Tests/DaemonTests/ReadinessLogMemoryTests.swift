@testable import BlueZ
@testable import Daemon
import Testing
import SpeakerdAPI

/// The "not ready to play" log line: a condition that repeats is said once until it changes.
@Suite("Readiness log: repeated conditions said once")
struct ReadinessLogMemoryTests {
    static let flip = try! BluetoothAddress("11:22:33:AA:BB:CC")
    static let boom = try! BluetoothAddress("33:44:55:CC:DD:EE")

    @Test("a speaker left off: its retries (connecting, out of reach with a new delay) are said once")
    func retriesSaidOnce() {
        var memory = ReadinessLogMemory()
        let said = [
            NotReadyReason.connecting("JBL Flip 5"),
            .unreachable("JBL Flip 5", retryIn: .seconds(1)),
            .connecting("JBL Flip 5"),
            .unreachable("JBL Flip 5", retryIn: .seconds(2)),
            .connecting("JBL Flip 5"),
            .unreachable("JBL Flip 5", retryIn: .seconds(2)),
        ].filter { memory.shouldSay($0, about: Self.flip) }
        #expect(said.map(\.message) == ["connecting to JBL Flip 5…", "JBL Flip 5 is out of reach; retrying in 1 s"])
    }

    @Test("another condition, another speaker, or being ready in between is news again")
    func changesAreNews() {
        var memory = ReadinessLogMemory()
        var said: [Bool] = []
        said.append(memory.shouldSay(.unreachable("JBL Flip 5", retryIn: .seconds(1)), about: Self.flip))
        said.append(memory.shouldSay(.noAudioDevice("JBL Flip 5", "no PCM yet"), about: Self.flip))
        said.append(memory.shouldSay(.noAudioDevice("JBL Flip 5", "no PCM yet"), about: Self.flip))
        said.append(memory.shouldSay(.unreachable("UE Boom 3", retryIn: .seconds(1)), about: Self.boom))
        said.append(memory.shouldSay(.connecting("UE Boom 3"), about: Self.boom))
        memory.forget()
        said.append(memory.shouldSay(.connecting("UE Boom 3"), about: Self.boom))
        #expect(said == [true, true, false, true, false, true])
    }
}
