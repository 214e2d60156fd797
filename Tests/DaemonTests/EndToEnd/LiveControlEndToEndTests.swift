import Foundation
import SpeakerdAPI
import TestSupport
import Testing

/// The composer's controls while a song plays, through the real programs: `loop`, `transpose`,
/// `seek`, `loop off`, heard in the WAV speakerd writes, and refused in one line when the song
/// cannot take them or nothing plays.
@Suite("Live controls, end to end")
struct LiveControlEndToEndTests {
    @Test("loop 1-1 repeats the scale's first bar until 'loop off'; transpose 2 lifts the rest a tone; seek past the end is refused and changes nothing")
    func loopTransposeAndRefusals() async throws {
        let scale = try GatedPlayEndToEndTests.song()  // C D E F | G A B C, half a second each
        let wav = try await ArrangedPlayEndToEndTests.withReadySpeakerd { bus, client in
            func cli(_ arguments: String...) async throws -> ExecutableRun {
                try await ExecutableRun.run("composer-cli", arguments + ["--bus", bus])
            }
            let played = try await cli("play", scale)
            #expect(played.status == 0, "\(played.standardError)")
            let looped = try await cli("loop", "1-1")
            #expect(looped.status == 0 && looped.standardError.isEmpty, "\(looped.standardError)")
            // A pass and a half of bar 1, in real time.
            try await Task.sleep(for: .seconds(3))
            let status = try await client.status().playback
            #expect(status.state == "playing", "\(status)")
            let position = try #require(status.positionSeconds)
            #expect(position >= 0 && position < 2.05, "inside bar 1 while it loops: \(position) s")

            let transposed = try await cli("transpose", "+2")
            #expect(transposed.status == 0, "\(transposed.standardError)")
            // status says what the song plays with, on a terminal and under stable keys.
            #expect(transposed.standardOutput.contains("Controls:  loop 1-1, transpose +2"), "\(transposed.standardOutput)")
            let json = try await cli("status", "--json")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any])
            let controls = try #require((object["playback"] as? [String: Any])?["controls"] as? [String: Any], "\(json.standardOutput)")
            #expect(Set(controls.keys) == ["loop", "tempo", "transpose", "mute", "solo"], "\(controls)")
            #expect(controls["loop"] as? String == "1-1" && controls["transpose"] as? Int == 2 && controls["tempo"] is NSNull,
                    "\(controls)")
            // And where the song is in its bars: inside the looped bar 1 of the scale's 2.
            #expect(transposed.standardOutput.contains(", bar 1 beat "), "\(transposed.standardOutput)")
            // At the tempo heard there: quarter notes of half a second, 120 BPM.
            #expect(transposed.standardOutput.contains(" of 2, 120 BPM\n"), "\(transposed.standardOutput)")
            let place = try #require((object["playback"] as? [String: Any])?["musicalPosition"] as? [String: Any], "\(json.standardOutput)")
            #expect(Set(place.keys) == ["bar", "beat", "bars", "bpm"] && place["bar"] as? Int == 1 && place["bars"] as? Int == 2
                        && place["bpm"] as? Double == 120, "\(place)")
            // A tempo control changes the tempo heard, and status says the new one.
            let faster = try await cli("tempo", "150%")
            #expect(faster.status == 0 && faster.standardOutput.contains(" of 2, 180 BPM\n"), "\(faster.standardOutput)\(faster.standardError)")
            let asWritten = try await cli("tempo", "100%")
            #expect(asWritten.status == 0 && asWritten.standardOutput.contains(" of 2, 120 BPM\n"), "\(asWritten.standardOutput)")
            let refused = try await cli("seek", "99")
            #expect(refused.status != 0)
            #expect(refused.standardError.hasPrefix("composer-cli: 'seek 99' does not fit test-c-major-scale.mid: "), "\(refused.standardError)")
            #expect(refused.standardError.contains("99") && refused.standardError.split(separator: "\n").count == 1,
                    "one line naming the bar: \(refused.standardError)")
            // A section that ends before it starts, live, is one refused line (InvalidControl), not
            // the daemon's end; so is one that ends where it starts.
            for backwards in ["2-1", "3s-1s", "1:3-1:2"] {
                let inverted = try await cli("loop", backwards)
                #expect(inverted.status != 0 && inverted.standardError.contains("ends where it starts or before")
                            && inverted.standardError.split(separator: "\n").count == 1, "loop \(backwards): \(inverted.standardError)")
            }
            #expect(try await client.status().playback.state == "playing", "an inverted loop leaves the song playing")
            let malformed = try await cli("tempo", "fast")
            #expect(malformed.status == 64 && malformed.standardError.contains("tempo: 'fast' is not a tempo"), "\(malformed.standardError)")
            #expect(try await client.status().playback.state == "playing", "a refused control leaves the song playing")

            let unlooped = try await cli("loop", "off")
            #expect(unlooped.status == 0, "\(unlooped.standardError)")
            #expect(unlooped.standardOutput.contains("Controls:  transpose +2"), "\(unlooped.standardOutput)")
            try await eventually("the song plays to its end once the loop is off", within: .seconds(15)) {
                (try? await client.status().playback.state) == "idle"
            }
            let nothing = try await cli("seek", "1")
            #expect(nothing.status != 0 && nothing.standardError == "composer-cli: cannot seek: nothing is playing\n",
                    "\(nothing.standardError)")
        }
        let file = try #require(wav, "speakerd wrote no WAV")
        let mono = file.monoFloat
        let rate = file.sampleRate
        // The 4 s scale, with at least one more pass of its 2 s first bar.
        #expect(file.seconds > 6, "the WAV lasts \(file.seconds) s")
        func strongest(_ candidates: [Double], from: Double, to: Double) -> Double {
            let window = mono[Int(from * Double(rate))..<min(mono.count, Int(to * Double(rate)))]
            return candidates.max { WAVAnalysis.energy(at: $0, in: window, sampleRate: rate) < WAVAnalysis.energy(at: $1, in: window, sampleRate: rate) }!
        }
        // After the 150 ms pre-roll: C4 opens the song, and C4 again two seconds on (the loop),
        // where the scale as written has G4.
        #expect(strongest([261.63, 392.0], from: 0.2, to: 0.5) == 261.63)
        #expect(strongest([261.63, 392.0], from: 2.2, to: 2.5) == 261.63, "bar 1 again at 2 s: the loop")
        // The song's last note, C5, sounds a tone up: D5.
        let end = Double(mono.count) / Double(rate)
        let onsets = WAVAnalysis.onsets(Array(mono), sampleRate: rate)
        let last = try #require(onsets.last { $0 < end - 0.3 })
        #expect(strongest([523.25, 587.33], from: last + 0.03, to: last + 0.3) == 587.33, "the last note after transpose +2 (onset at \(last) s)")
    }

    @Test("seek 2 a second into the scale: what speakerd plays from there is, to the sample, what 'composer-cli render --from 2' writes")
    func seekIsTheRenderFromItsTarget() async throws {
        let scale = try GatedPlayEndToEndTests.song()  // C D E F | G A B C, half a second each
        let wav = try await ArrangedPlayEndToEndTests.withReadySpeakerd { bus, client in
            let played = try await ExecutableRun.run("composer-cli", ["play", scale, "--bus", bus])
            #expect(played.status == 0, "\(played.standardError)")
            try await eventually("the scale is a second in", within: .seconds(10)) {
                ((try? await client.status().playback.positionSeconds) ?? 0) >= 1
            }
            let sought = try await ExecutableRun.run("composer-cli", ["seek", "2", "--bus", bus])
            #expect(sought.status == 0, "\(sought.standardError)")
            try await eventually("the scale plays to its end from bar 2", within: .seconds(15)) {
                (try? await client.status().playback.state) == "idle"
            }
        }
        let file = try #require(wav, "speakerd wrote no WAV")
        let reference = FileManager.default.temporaryDirectory.path + "/seek-reference-\(getpid()).wav"
        defer { try? FileManager.default.removeItem(atPath: reference) }
        let rendered = try await ExecutableRun.run("composer-cli", ["render", scale, "--from", "2", "-o", reference,
                                                                    "--soundfont", GatedPlayEndToEndTests.soundFont])
        #expect(rendered.status == 0, "\(rendered.standardError)")
        let wanted = try WAVFile(path: reference)
        // Bar 2 and its release tail: 2 s and a little.
        #expect(wanted.seconds > 2 && wanted.seconds < 3.1, "the render from bar 2 lasts \(wanted.seconds) s")
        #expect(file.sampleRate == wanted.sampleRate && file.channels == wanted.channels)
        // speakerd's WAV ends with exactly the render from bar 2: the seek's frames, sample for
        // sample, with what played before it (the pre-roll and bar 1's first second) ahead of them.
        #expect(file.samples.count > wanted.samples.count, "speakerd's WAV: \(file.seconds) s")
        let heard = file.samples.suffix(wanted.samples.count)
        let firstDifference = WAVAnalysis.firstDifference(heard, wanted.samples)
        #expect(firstDifference == nil, "speakerd's WAV departs from the render from bar 2 at sample \(firstDifference ?? -1) of \(wanted.samples.count)")
        // And the part before it holds the pre-roll and at least the scale's first second: the
        // seek came mid-song (before its 4 s had played, on a busy machine later than at 1 s).
        let before = Double(file.frameCount - wanted.frameCount) / Double(file.sampleRate)
        #expect(before > 1 && before < 4, "the seek came \(before) s into speakerd's WAV")
    }

    @Test("play --loop 1-1 without a count loops bar 1 until 'loop off', then the song plays to its end")
    func playLoopsUntilTurnedOff() async throws {
        let scale = try GatedPlayEndToEndTests.song()
        let wav = try await ArrangedPlayEndToEndTests.withReadySpeakerd { bus, client in
            let played = try await ExecutableRun.run("composer-cli", ["play", scale, "--loop", "1-1", "--bus", bus])
            #expect(played.status == 0, "\(played.standardError)")
            #expect(played.standardOutput.contains("Controls:  loop 1-1"), "\(played.standardOutput)")
            // Two and a half passes of the 2 s bar: still playing, still in bar 1.
            try await Task.sleep(for: .seconds(5))
            let status = try await client.status().playback
            #expect(status.state == "playing" && status.musicalPosition?.bar == 1, "\(status)")
            #expect(status.durationSeconds.map { abs($0 - 4) < 0.05 } == true, "the written song's length: \(status)")
            let off = try await ExecutableRun.run("composer-cli", ["loop", "off", "--bus", bus])
            #expect(off.status == 0, "\(off.standardError)")
            try await eventually("the song plays to its end once the loop is off", within: .seconds(15)) {
                (try? await client.status().playback.state) == "idle"
            }
        }
        let file = try #require(wav, "speakerd wrote no WAV")
        let mono = file.monoFloat, rate = file.sampleRate
        #expect(file.seconds > 7, "at least two more passes of bar 1 than the 4 s song: \(file.seconds) s")
        func strongest(_ candidates: [Double], from: Double, to: Double) -> Double {
            let window = mono[Int(from * Double(rate))..<min(mono.count, Int(to * Double(rate)))]
            return candidates.max { WAVAnalysis.energy(at: $0, in: window, sampleRate: rate) < WAVAnalysis.energy(at: $1, in: window, sampleRate: rate) }!
        }
        // C4 at the start of each pass (after the 150 ms pre-roll), where the scale has G4 at 2 s.
        for pass in 0..<3 {
            let start = 0.2 + Double(pass) * 2
            #expect(strongest([261.63, 392.0], from: start, to: start + 0.3) == 261.63, "pass \(pass + 1) begins with C4")
        }
    }
}
