import AudioPath
@testable import BlueZ
import Clocks
import Synchronization
import Testing

/// A PCM list the test changes by hand, standing in for BlueALSA's object manager.
final class ScriptedPCMSource: BlueALSAPCMSource {
    private struct State {
        var pcms: [BlueALSAPCM] = []
        var subscribers: [Int: AsyncThrowingStream<[BlueALSAPCM], any Error>.Continuation] = [:]
        var next = 0
    }

    private let state = Mutex(State())

    func pcmSets() -> AsyncThrowingStream<[BlueALSAPCM], any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: [BlueALSAPCM].self)
        let id = state.withLock { state in
            defer { state.next += 1 }
            state.subscribers[state.next] = continuation
            continuation.yield(state.pcms)
            return state.next
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    func set(_ pcms: [BlueALSAPCM]) {
        state.withLock { state in
            state.pcms = pcms
            for continuation in state.subscribers.values { continuation.yield(pcms) }
        }
    }

    func fail(_ error: any Error) {
        // Finished outside the lock: finishing runs `onTermination`, which takes the lock.
        let subscribers = state.withLock { state in
            defer { state.subscribers = [:] }
            return Array(state.subscribers.values)
        }
        for continuation in subscribers { continuation.finish(throwing: error) }
    }

    var subscriberCount: Int { state.withLock { $0.subscribers.count } }
}

private struct BusGone: Error, CustomStringConvertible {
    var description: String { "the bus connection was closed" }
}

/// Audio-path readiness: a speaker is ready for audio only once BlueALSA has its A2DP playback
/// PCM, not when BlueZ says it is connected.
@Suite("BlueALSA audio path")
struct BlueALSAAudioPathTests {
    private let speaker = try! BluetoothAddress("11:22:33:AA:BB:CC")
    private let speakerPCM = BlueALSAPCM(path: "/org/bluealsa/hci0/dev_11_22_33_AA_BB_CC/a2dpsrc/sink",
                                          device: "/org/bluez/hci0/dev_11_22_33_AA_BB_CC",
                                          transport: "A2DP-source", mode: "sink", running: false)

    private func eventually(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<100_000 {
            if condition() { return true }
            await Task.yield()
        }
        return condition()
    }

    @Test("a PCM's address comes from its BlueZ device path, and the ALSA device names it")
    func pcmDescribesItsSpeaker() {
        #expect(speakerPCM.address == speaker)
        #expect(speakerPCM.isA2DPPlayback)
        #expect(BlueALSAPCM.alsaDevice(for: speaker) == "bluealsa:DEV=11:22:33:AA:BB:CC,PROFILE=a2dp")
        #expect(BlueALSAOutput(address: speaker, audioPath: BlueALSAAudioPath(source: ScriptedPCMSource())).description
            == "alsa:bluealsa:DEV=11:22:33:AA:BB:CC,PROFILE=a2dp")
        let odd = BlueALSAPCM(path: "/org/bluealsa/x", device: "/org/bluez/hci0", transport: "A2DP-source", mode: "sink")
        #expect(odd.address == nil)
    }

    @Test("waiting returns at once when the speaker's PCM is already there")
    func readyAtOnce() async throws {
        let source = ScriptedPCMSource()
        source.set([speakerPCM])
        let pcm = try await BlueALSAAudioPath(source: source).waitUntilReady(for: speaker)
        #expect(pcm == speakerPCM)
    }

    @Test("the speaker is not ready until BlueALSA adds its A2DP sink PCM; other PCMs do not count")
    func waitsForTheRightPCM() async throws {
        let source = ScriptedPCMSource()
        let path = BlueALSAAudioPath(source: source, clock: TestClock())
        let speaker = speaker
        let wait = Task { try await path.waitUntilReady(for: speaker) }
        #expect(await eventually { source.subscriberCount == 1 })
        let headsetSCO = BlueALSAPCM(path: "/org/bluealsa/hci0/dev_11_22_33_AA_BB_CC/sco/sink",
                                     device: speakerPCM.device, transport: "HFP-AG", mode: "sink")
        let otherSpeaker = BlueALSAPCM(path: "/org/bluealsa/hci0/dev_44_55_66_77_88_99/a2dpsrc/sink",
                                       device: "/org/bluez/hci0/dev_44_55_66_77_88_99", transport: "A2DP-source", mode: "sink")
        let microphone = BlueALSAPCM(path: "/org/bluealsa/hci0/dev_11_22_33_AA_BB_CC/a2dpsrc/source",
                                     device: speakerPCM.device, transport: "A2DP-source", mode: "source")
        source.set([headsetSCO, otherSpeaker, microphone])
        for _ in 0..<500 { await Task.yield() }
        #expect(source.subscriberCount == 1, "gave up or finished early")
        source.set([headsetSCO, otherSpeaker, microphone, speakerPCM])
        #expect(try await wait.value == speakerPCM)
        #expect(await eventually { source.subscriberCount == 0 }, "the PCM subscription outlived the wait")
    }

    @Test("with a timeout, waiting fails with a sentence on the injected clock")
    func timesOut() async throws {
        let clock = TestClock()
        let source = ScriptedPCMSource()
        let path = BlueALSAAudioPath(source: source, clock: clock)
        let speaker = speaker
        let wait = Task { try await path.waitUntilReady(for: speaker, timeout: .seconds(10)) }
        #expect(await eventually { source.subscriberCount == 1 })
        await clock.advance(by: .seconds(10))
        let result = await wait.result
        let expected = BlueALSAError.noPCM(address: "11:22:33:AA:BB:CC", after: .seconds(10))
        #expect(throws: expected) { try result.get() }
        #expect(expected.description.hasPrefix("BlueALSA has no A2DP output for speaker 11:22:33:AA:BB:CC after 10 s"))
    }

    @Test("a failing PCM source is reported, not waited on forever")
    func sourceFailure() async throws {
        let source = ScriptedPCMSource()
        let path = BlueALSAAudioPath(source: source)
        let speaker = speaker
        let wait = Task { try await path.waitUntilReady(for: speaker) }
        #expect(await eventually { source.subscriberCount == 1 })
        source.fail(BusGone())
        let result = await wait.result
        #expect(throws: BlueALSAError.unavailable(reason: "the bus connection was closed")) { try result.get() }
    }

    @Test("availability follows the PCM coming and going, each change once")
    func availabilityFollowsPCM() async throws {
        let source = ScriptedPCMSource()
        let path = BlueALSAAudioPath(source: source)
        var changes = path.availability(of: speaker).makeAsyncIterator()
        #expect(await changes.next() == false)
        source.set([speakerPCM])
        #expect(await changes.next() == true)
        source.set([speakerPCM]) // the same set again: no new answer
        source.set([])
        #expect(await changes.next() == false)
        source.set([speakerPCM])
        #expect(await changes.next() == true)
        source.fail(BusGone())
        #expect(await changes.next() == false)
        #expect(await changes.next() == nil)
    }
}
