import Foundation
import Testing
import TestSupport

/// Note timing as the speaker's sink hears it: the pitch checks (`WAVAnalysis.a4Windows`)
/// show the song reaches the sink in tune; these show it reaches it in time, its rhythm neither
/// stretched, squeezed nor shifted note by note on the way through speakerd and the sound server.
@Suite("notes reach the speaker's sink in time, on PulseAudio and on PipeWire", .serialized)
struct SinkNoteTimingTests {
    /// Piano notes (a sharp attack, easy to place) at uneven times, each 0.3 s long with at least
    /// 0.2 s of quiet before the next, so every start is a clear onset and a uniform stretch or a
    /// shifted note shows in the intervals.
    static let starts = [0.5, 1.0, 1.75, 2.25, 3.0]
    static let rhythm = ClientSongs.smf(program: 0, notes: zip([60, 64, 67, 72, 67] as [UInt8], starts).map { ($0, $1, $1 + 0.3) },
                                        end: 3.5)

    /// The recording starts before the song does, so only the intervals between note starts are
    /// compared. The WAV tests allow 20 ms on each onset of an offline render; a real server adds
    /// its own scheduling (PipeWire's quantum, the null sink's blocks, parec's 20 ms fragments) and
    /// a loaded machine can delay a block, so each interval may be off by up to 40 ms (twice that).
    static let tolerance = 0.04

    @Test("a rhythm played through speakerd reaches the speaker's sink with every interval between note starts within 40 ms of the song's",
          .timeLimit(.minutes(2)), arguments: SoundServerKind.allCases)
    func intervalsBetweenNoteStarts(kind: SoundServerKind) async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await PulseAudioServer.start(in: directory, kind: kind)
        var recording: Recording?
        try await PulseAudioDaemonTests.withDaemon(followingSinkOn: server, in: directory) { client, follower in
            let sink = try #require(follower.sink)
            recording = try await server.record(to: directory.appendingPathComponent("rhythm.raw").path, from: sink.monitor)
            _ = try await client.play(try PulseAudioDaemonTests.request(Self.rhythm, named: "rhythm.mid", in: directory))
            try await PulseAudioDaemonTests.eventually("the song has played to its end") {
                try await client.status().playback.state != "playing"
            }
            #expect(try await client.status().playback.state == "idle")
        }
        let recorded = try await #require(recording).finish()
        let (mono, underruns) = Self.cuttingUnderruns(recorded)
        #expect(underruns.seconds < 1, "\(underruns.count) underruns took \(underruns.seconds) s of a 3.5 s song: speakerd's stream starved")
        let heard = WAVAnalysis.onsets(mono, sampleRate: 44_100)
        #expect(heard.count == Self.starts.count, "the sink heard \(heard.count) note starts, at \(heard) s (\(underruns.count) underruns cut); the song has \(Self.starts.count)")
        guard heard.count == Self.starts.count else { return }
        for index in 1..<heard.count {
            let interval = heard[index] - heard[index - 1]
            let expected = Self.starts[index] - Self.starts[index - 1]
            #expect(abs(interval - expected) <= Self.tolerance,
                    "note \(index + 1) started \(interval) s after note \(index), not \(expected) s (all starts heard: \(heard); \(underruns.count) underruns cut)")
        }
    }

    @Test("an underrun's digital silence is cut from a recording and counted; the silence before the song and the signal's own zero crossings are not")
    func underrunsAreCut() {
        let tone = (1...4_410).map { Float(sin(Double($0) * 2 * .pi * 440 / 44_100)) * 0.5 }
        let recording = [Float](repeating: 0, count: 2_000) + tone + [Float](repeating: 0, count: 882) + tone
        let (kept, underruns) = Self.cuttingUnderruns(recording)
        #expect(underruns.count == 1)
        #expect(abs(underruns.seconds - 0.02) < 0.0001)
        #expect(kept.count == 2_000 + 2 * tone.count)
        #expect(kept == [Float](repeating: 0, count: 2_000) + tone + tone, "the cut took more than the underrun")
    }

    /// The recording without its underruns, and how many there were and how long they took.
    ///
    /// A test machine that starves speakerd (two cores, every sound test at once) makes its stream
    /// run dry now and then; the null sink then mixes digital silence for it and the song goes on
    /// later, so each underrun shows as a run of exact zeros that shifts what follows and starts a
    /// false note where the sound resumes. While a song plays, its own signal (a note, its release,
    /// FluidSynth's reverb) never stays at exact zero for 5 ms (at most 9 samples here), so such
    /// runs are cut: what is judged is the rhythm of what speakerd delivered, at the rate the
    /// server played it (a wrong rate or lost or repeated audio still shows), and the underruns
    /// are counted so that a stream starved for most of the song fails instead of being cut away.
    static func cuttingUnderruns(_ samples: [Float], sampleRate: Int = 44_100) -> ([Float], (count: Int, seconds: Double)) {
        let shortest = sampleRate / 200
        var kept: [Float] = []
        kept.reserveCapacity(samples.count)
        var count = 0, cut = 0, index = 0, sounded = false
        while index < samples.count {
            guard samples[index] == 0 else {
                kept.append(samples[index])
                sounded = true
                index += 1
                continue
            }
            var end = index
            while end < samples.count, samples[end] == 0 { end += 1 }
            // Silence before the song and after it is no underrun, and it does not matter to intervals.
            if end - index >= shortest, sounded, end < samples.count {
                count += 1
                cut += end - index
            } else {
                kept += samples[index..<end]
            }
            index = end
        }
        return (kept, (count, Double(cut) / Double(sampleRate)))
    }
}
