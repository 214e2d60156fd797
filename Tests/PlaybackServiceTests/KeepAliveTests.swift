import Foundation
@testable import Playback
@testable import PlaybackService
import TestSupport
import Testing

/// `keep_alive`: an idle, ready speaker hears the inaudible signal (not digital zeros); a song,
/// or the speaker's audio path going away, stops it; with the setting off nothing is played.
/// Each output the player opens is its own WAV (`song-0.wav`, …), the keep-alive's included.
@Suite("Keep-alive for an idle speaker")
struct KeepAliveTests {
    private let song = ClientSongs.sustainedA4(seconds: 2)

    /// A player with `keep_alive` as given, its speaker ready, following the gate as the
    /// daemon's player does from its start.
    private func harness(keepAlive: Bool = true, sound: KeepAliveSound = .bursts) async throws -> PlayerHarness {
        let harness = try await PlayerHarness(initial: .playbackReady,
                                              settings: PlaybackServiceSettings(keepAlive: keepAlive, keepAliveSound: sound))
        await harness.player.followSpeaker()
        return harness
    }

    /// The peak of a WAV as a fraction of full scale.
    private func peak(_ wav: WAVFile) -> Float { WAVAnalysis.peak(wav.monoFloat[...]) }

    /// Waits (real time, at most 20 s) until output `index` renders: its hidden partial file holds
    /// audio past the header. Its render loop then paces from the test clock's present, so every
    /// step the test advances from here on is heard; advancing before that (the output opens in
    /// the background, late on a loaded machine) would shorten what it renders.
    private func outputRenders(_ index: Int, in harness: PlayerHarness) async throws -> Bool {
        try await harness.waitForPartial(index) { $0 > 0 }
    }

    /// Waits (real time, at most 20 s) until output `index` has written `seconds` of audio. The
    /// test clock lets the render loop write up to its present, but the loop runs in the
    /// background and, on a loaded machine (AddressSanitizer in CI), can still be catching up when
    /// the test closes the output; closing only once the audio the clock allowed is written makes
    /// the WAV's length a fact of the clock, not of the machine's speed.
    private func rendered(_ seconds: Double, output index: Int, in harness: PlayerHarness) async throws -> Bool {
        try await harness.waitForPartial(index) { $0 >= seconds }
    }

    @Test("a ready idle speaker gets the -60 dBFS signal until a song starts, and again after it")
    func signalWhileIdleOnly() async throws {
        let harness = try await harness()
        defer { harness.cleanUp() }
        #expect(try await outputRenders(0, in: harness), "the keep-alive's output never started")
        await harness.play(for: .seconds(6))
        #expect(try await rendered(5.5, output: 0, in: harness))

        try await harness.startPlaying(song, named: "song.mid")
        // The keep-alive's output closed before the song's opened: its WAV is complete.
        let idle = try harness.wav(0)
        #expect(idle.seconds >= 5.5, "the signal played while idle (\(idle.seconds) s)")
        let idlePeak = peak(idle)
        #expect(idlePeak > 0.0005 && idlePeak < 0.002, "inaudible but not digital silence: peak \(idlePeak)")
        #expect(idle.samples.contains { $0 != 0 })

        await harness.play(for: .seconds(3))
        #expect(await harness.eventually { await harness.activity() == .idle })
        #expect(peak(try harness.wav(1)) > 0.02, "the song itself, at its own level")
        // Idle again: the signal resumes on an output of its own (complete once shutdown closes it).
        #expect(try await outputRenders(2, in: harness), "the keep-alive's output never came back after the song")
        await harness.play(for: .seconds(2))
        await harness.player.shutdown()
        #expect(try harness.wav(2).samples.contains { $0 != 0 })
    }

    @Test("keep_alive = tone: an idle speaker gets a steady 30 Hz tone at 1.2 % of full scale, checked in the rendered WAV")
    func toneForSpeakersThatSleepOnSilence() async throws {
        let harness = try await harness(sound: .tone)
        defer { harness.cleanUp() }
        #expect(try await outputRenders(0, in: harness), "the keep-alive's output never started")
        await harness.play(for: .seconds(3))
        #expect(try await rendered(2.5, output: 0, in: harness))
        await harness.player.shutdown()
        let wav = try harness.wav(0)
        #expect(wav.seconds >= 2.5, "\(wav.seconds) s")
        let samples = wav.monoFloat
        // Level: its peak is 1.2 % of full scale, steady (every second reaches it, no bursts).
        let level = peak(wav)
        #expect(level > 0.0115 && level < 0.0125, "peak \(level), expected 0.012")
        let second = wav.sampleRate
        for start in stride(from: 0, to: samples.count - second, by: second) {
            let window = WAVAnalysis.peak(samples[start..<(start + second)])
            #expect(window > 0.0115, "a quiet second at \(start / second) s: peak \(window)")
        }
        // Frequency: 30 Hz, i.e. 60 zero crossings a second, and its energy there, not an octave off.
        let whole = samples[0..<(samples.count / second * second)]
        let perSecond = WAVAnalysis.zeroCrossingsPerSecond(whole, sampleRate: second)
        #expect(abs(perSecond - 60) < 2, "\(perSecond) zero crossings a second")
        let at30 = WAVAnalysis.energy(at: 30, in: whole, sampleRate: second)
        #expect(at30 > 100 * WAVAnalysis.energy(at: 60, in: whole, sampleRate: second), "not 30 Hz")
        #expect(at30 > 100 * WAVAnalysis.energy(at: 15, in: whole, sampleRate: second), "not 30 Hz")
    }

    @Test("keep_alive = silence: an idle speaker gets an open stream of digital zeros")
    func silenceIsAnOpenStreamOfZeros() async throws {
        let harness = try await harness(sound: .silence)
        defer { harness.cleanUp() }
        #expect(try await outputRenders(0, in: harness), "the keep-alive's output never started")
        await harness.play(for: .seconds(2))
        #expect(try await rendered(1.5, output: 0, in: harness))
        await harness.player.shutdown()
        let wav = try harness.wav(0)
        #expect(wav.seconds >= 1.5, "the stream was open (\(wav.seconds) s)")
        #expect(wav.samples.allSatisfy { $0 == 0 })
    }

    @Test("the signal stops when the speaker's audio path goes away, and comes back with it")
    func stopsWithTheAudioPath() async throws {
        let harness = try await harness()
        defer { harness.cleanUp() }
        #expect(try await outputRenders(0, in: harness), "the keep-alive's output never started")
        await harness.play(for: .seconds(2))
        #expect(try await rendered(1.5, output: 0, in: harness))
        harness.gate.drop(to: .speakerConnected)
        // Closing the output completes the WAV: a header that agrees with its data.
        #expect(await harness.eventually { ((try? harness.wav(0))?.seconds ?? 0) >= 1.5 })
        let closed = try harness.wav(0).frameCount
        await harness.play(for: .seconds(2))
        #expect(try harness.wav(0).frameCount == closed, "nothing more after the path dropped")
        #expect(!FileManager.default.fileExists(atPath: harness.directory.appendingPathComponent("song-1.wav").path))

        harness.gate.raise(to: .playbackReady)
        // It comes back on an output opened in the background: the clock moves once it renders
        // (moved before, under AddressSanitizer in CI, it rendered nothing before shutdown).
        #expect(try await outputRenders(1, in: harness), "the keep-alive's output never came back with the audio path")
        await harness.play(for: .seconds(1))
        await harness.player.shutdown()
        #expect(try harness.wav(1).samples.contains { $0 != 0 })
    }

    @Test("with keep_alive off an idle speaker is sent nothing")
    func offSendsNothing() async throws {
        let harness = try await harness(keepAlive: false)
        defer { harness.cleanUp() }
        await harness.play(for: .seconds(6))
        for _ in 0..<1000 { await Task.yield() }
        #expect(!FileManager.default.fileExists(atPath: harness.directory.appendingPathComponent("song-0.wav").path))
    }

    @Test("a paused song's device hears the keep-alive signal with keep_alive, digital silence without; the song stays put")
    func pausedSongKeepsTheSpeakerAwake() async throws {
        let soundFont = try await Fixtures.soundFont()
        let song = Fixtures.song(program: Fixtures.piano, notes: [(60, 0, 0.5)], duration: 10)
        for keepAlive in [true, false] {
            let source = try PlaybackSource(song: song, soundFont: soundFont, keepAliveWhilePaused: keepAlive)
            defer { source.stop() }
            source.pause()
            var left = [Float](repeating: 1, count: 44_100)
            var right = left
            let produced = left.withUnsafeMutableBufferPointer { left in
                right.withUnsafeMutableBufferPointer { right in
                    source.renderForDevice(left: left.baseAddress!, right: right.baseAddress!, frames: 44_100)
                }
            }
            #expect(produced == 0, "no frame of the song while paused")
            #expect(source.positionSeconds == 0)
            #expect(left == right)
            if keepAlive {
                let peak = WAVAnalysis.peak(left[...])
                #expect(peak > 0.0008 && peak <= 0.001, "peak \(peak), expected about -60 dBFS")
            } else {
                #expect(left.allSatisfy { $0 == 0 })
            }
        }
    }
}
