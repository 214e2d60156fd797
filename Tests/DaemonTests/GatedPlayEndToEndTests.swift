import MIDI
import Foundation
import Testing
import TestSupport
@testable import Daemon

/// The whole product path with the real programs: `composer-cli play` → speakerd's D-Bus API →
/// the readiness gate → FluidSynth → a WAV file, on a private bus with the fake BlueZ.
///
/// The play is asked while speakerd cannot possibly play (bluetoothd is not even on the bus), so
/// the request must wait in the gate; BlueZ and the speaker then appear, speakerd connects, and
/// the song must come out whole. Serialized and bounded: every wait ends as soon as its condition
/// holds, and the bounds only turn a hang into a failure.
@Suite("Gated play end to end: composer-cli, speakerd, FluidSynth, WAV", .serialized)
struct GatedPlayEndToEndTests {
    static let soundFont = "/usr/share/sounds/sf2/TimGM6mb.sf2"

    /// `test-c-major-scale.mid` from the shared corpus (`<repo>/../shared/corpus`, or
    /// `$SPEAKERD_MIDI_CORPUS`); missing is a failure, never a pass.
    static func song() throws -> String {
        let directory = ProcessInfo.processInfo.environment["SPEAKERD_MIDI_CORPUS"].flatMap { $0.isEmpty ? nil : $0 }
            ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .appendingPathComponent("../../../shared/corpus/jazz-soft-midi").standardized.path
        let path = directory + "/test-c-major-scale.mid"
        try #require(FileManager.default.fileExists(atPath: path), "MIDI corpus not found at \(directory)")
        return path
    }

    @Test("a play asked before bluetoothd is even there waits, then the whole song reaches the WAV once the speaker connects")
    func playWaitsForTheSpeakerThenRendersTheWholeSong() async throws {
        let songPath = try Self.song()
        let song = try MIDIFileReader.read(contentsOfFile: songPath)
        let fake = try await DaemonWorld.start(bluez: false)
        let state = fake.state
        fake.remember([DaemonWorld.flip])
        state.write("", to: "speakerd.conf")
        let wav = state.path + "/song.wav"
        let listener = NotifySocketListener(path: state.path + "/notify")
        let address = fake.world.address

        let daemon = try await ExecutableRun.run(
            "speakerd",
            ["--config", state.path + "/speakerd.conf", "--state-dir", state.path, "--bus", address,
             "--audio-output", "file:" + wav, "--soundfont", Self.soundFont],
            environment: ["NOTIFY_SOCKET": listener.notifySocket]
        ) { pid in
            defer { kill(pid, SIGTERM) }
            var notifications: [String] = []
            try await eventually("speakerd says READY=1") {
                notifications += listener.receiveAll()
                return notifications.contains { $0.contains("READY=1") }
            }
            let client = try await fake.client()
            let before = try await client.status()
            #expect(before.readiness != "playbackReady", "speakerd cannot be ready without BlueZ")

            // The user plays now; the request has to wait for the speaker.
            async let play = ExecutableRun.run("composer-cli", ["play", songPath, "--bus", address])
            try await eventually("the request waits in the readiness gate") {
                try await client.status().playback.state == "waiting"
            }

            // bluetoothd starts and the speaker is there: speakerd connects and the song starts.
            try await fake.world.startBlueZ()
            try await fake.addAdapter()
            try await fake.addSpeaker()
            let played = try await play
            #expect(played.status == 0, "composer-cli play failed: \(played.standardError)")
            #expect(played.standardError.isEmpty)

            try await eventually("the song has played to its end", within: .seconds(30)) {
                let state = try await client.status().playback.state
                return state != "waiting" && state != "playing"
            }
            let after = try await client.status()
            #expect(after.readiness == "playbackReady")
            #expect(after.speaker?.connected == true)
        }
        #expect(daemon.status == 0, "speakerd did not stop cleanly on SIGTERM: \(daemon.standardError)")

        try expectWholeScaleInTune(wav: wav, song: song)
        _ = fake
    }
}

/// What the speaker would have heard from the C major scale song: the whole scale, no more than
/// a short release tail, and each note in tune: in the 200 ms after its note-on, its own pitch
/// carries more energy than the pitch a tritone away (no harmonic of it).
func expectWholeScaleInTune(wav: String, song: MIDISong, sourceLocation: SourceLocation = #_sourceLocation) throws {
    expectWholeScaleInTune(wav: try WAVFile(path: wav), song: song, sourceLocation: sourceLocation)
}

func expectWholeScaleInTune(wav file: WAVFile, song: MIDISong, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(file.seconds >= song.durationSeconds - 0.05 && file.seconds <= song.durationSeconds + 1.05,
            "the WAV lasts \(file.seconds) s for a \(song.durationSeconds) s song", sourceLocation: sourceLocation)
    let mono = file.monoFloat
    #expect(WAVAnalysis.rms(mono[...]) > 0.005, "the rendered song is silent", sourceLocation: sourceLocation)
    let notes = song.events.compactMap { event -> (seconds: Double, key: UInt8)? in
        if case .noteOn(_, let key, let velocity) = event.message, velocity > 0 { return (event.seconds, key) }
        return nil
    }
    #expect(notes.count >= 7, "the C major scale has its notes", sourceLocation: sourceLocation)
    for note in notes {
        let start = Int((note.seconds + 0.03) * Double(file.sampleRate))
        let end = min(start + file.sampleRate / 5, mono.count)
        guard start < end else {
            Issue.record("note \(note.key) at \(note.seconds) s is past the WAV's end", sourceLocation: sourceLocation)
            continue
        }
        let pitch = 440 * pow(2, (Double(note.key) - 69) / 12)
        let own = WAVAnalysis.energy(at: pitch, in: mono[start..<end], sampleRate: file.sampleRate)
        let tritone = WAVAnalysis.energy(at: pitch * pow(2, 6.0 / 12), in: mono[start..<end], sampleRate: file.sampleRate)
        #expect(own > 4 * tritone, "key \(note.key) at \(note.seconds) s is not what sounds there", sourceLocation: sourceLocation)
    }
}
