import Foundation
import Glibc
import Synchronization
import Testing
import TestSupport

/// `composer-cli render` as a real process: interrupted or failing, it leaves no partial file.
@Suite("composer-cli render leaves nothing behind", .serialized)
struct RenderCommandTests {
    /// An hour of rest: long enough to be stopped midway, and writing 600 MB if it were not.
    func longSong(in directory: TemporaryDirectory) throws -> String {
        let path = directory.path + "/rest.mid"
        try Data(LongRestSong.bytes(seconds: 3600)).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test("SIGTERM and Ctrl-C during a render remove the partial file; one line, the signal's exit status",
          arguments: [(SIGTERM, Int32(143)), (SIGINT, Int32(130))])
    func signalRemovesPartial(_ signal: Int32, _ status: Int32) async throws {
        let directory = TemporaryDirectory()
        let song = try longSong(in: directory)
        let run = try await ExecutableRun.run("composer-cli", ["render", song, "-o", directory.path + "/rest.wav"]) { pid in
            try await eventually("the render has started writing") {
                directory.entries().contains { $0.hasSuffix(".partial") }
            }
            kill(pid, signal)
        }
        #expect(run.status == status)
        #expect(run.standardError == "composer-cli: the render was interrupted; nothing was written to \(directory.path)/rest.wav\n")
        #expect(directory.entries() == ["rest.mid"])
    }

    @Test("-o DIR/ says it names a directory, in one line with the fix, and writes nothing (DIR there or not)", arguments: ["out", "missing"])
    func outputIsADirectory(_ name: String) async throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.path + "/out", withIntermediateDirectories: true)
        let song = try GatedPlayEndToEndTests.song()
        let output = directory.path + "/" + name + "/"
        let run = try await ExecutableRun.run("composer-cli", ["render", song, "-o", output])
        #expect(run.status == 1)
        #expect(run.standardError == "composer-cli: \(output) is a directory: name the WAV file to write in it (-o \(directory.path)/\(name)/song.wav)\n")
        #expect(directory.entries() == ["out"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path + "/out").isEmpty)
    }

    @Test("a 100 MiB file is refused by its real size and the limit in MiB, before a byte is read; a FIFO past the limit too")
    func fileOverTheLimitNamesItsSize() async throws {
        let directory = TemporaryDirectory()
        // Sparse: 100 MiB long, nothing on disk.
        let big = directory.path + "/big.mid"
        let file = open(big, O_CREAT | O_WRONLY, 0o644)
        #expect(file >= 0)
        #expect(ftruncate(file, 100 << 20) == 0)
        close(file)
        let run = try await ExecutableRun.run("composer-cli", ["render", big, "-o", directory.path + "/big.wav"])
        #expect(run.status == 1)
        #expect(run.standardError == "composer-cli: \(big) is not a playable MIDI file: it is 100.0 MiB, over the 16 MiB limit for one song\n")
        #expect(directory.entries() == ["big.mid"])

        // A FIFO has no size to name: refused once it goes past the limit.
        let fifo = directory.path + "/endless.mid"
        #expect(mkfifo(fifo, 0o644) == 0)
        // The writer is a process of its own: once composer-cli stops reading, it dies of SIGPIPE.
        let cli = ExecutableRun.productsDirectory.appendingPathComponent("composer-cli").path
        let streamed = try await ExecutableRun.run(program: "/bin/sh", ["-c", "head -c 20000000 /dev/zero >\"$1\" & exec \"$0\" render \"$1\" -o \"$2\"",
                                                                         cli, fifo, directory.path + "/endless.wav"])
        #expect(streamed.status == 1)
        #expect(streamed.standardError == "composer-cli: \(fifo) is not a playable MIDI file: it is larger than the 16 MiB limit for one song\n")
        #expect(!directory.entries().contains("endless.wav"))
    }

    @Test("a directory, a device or a named pipe nobody writes to is one line, at once or within the pipe's wait, and no file")
    func inputsThatHoldNoSong() async throws {
        let directory = TemporaryDirectory()
        let output = directory.path + "/x.wav"
        let folder = try await ExecutableRun.run("composer-cli", ["render", directory.path, "-o", output])
        #expect(folder.status == 1)
        #expect(folder.standardError == "composer-cli: \(directory.path) is a directory, not a MIDI file\n")
        let device = try await ExecutableRun.run("composer-cli", ["render", "/dev/zero", "-o", output])
        #expect(device.status == 1 && device.standardError == "composer-cli: /dev/zero is a character device, not a MIDI file\n",
                "\(device.standardError)")
        let fifo = directory.path + "/nobody.mid"
        #expect(mkfifo(fifo, 0o644) == 0)
        let started = ContinuousClock.now
        let lonely = try await ExecutableRun.run("composer-cli", ["render", fifo, "-o", output])
        #expect(lonely.status == 1)
        #expect(lonely.standardError.hasPrefix("composer-cli: nothing wrote to the named pipe \(fifo) within 5 s; start its writer first")
                    && lonely.standardError.split(separator: "\n").count == 1, "\(lonely.standardError)")
        #expect(ContinuousClock.now - started < .seconds(15), "the render waited \(ContinuousClock.now - started) for a writer")
        #expect(directory.entries() == ["nobody.mid"])
    }

    @Test("SIGTERM ends a render stuck reading a pipe whose writer never closes, long before the writer would, with its line",
          arguments: [(SIGTERM, Int32(143)), (SIGINT, Int32(130))])
    func signalEndsAStuckRead(_ signal: Int32, _ status: Int32) async throws {
        let directory = TemporaryDirectory()
        let fifo = directory.path + "/slow.mid"
        #expect(mkfifo(fifo, 0o644) == 0)
        let cli = ExecutableRun.productsDirectory.appendingPathComponent("composer-cli").path
        let output = directory.path + "/slow.wav"
        let sent = Mutex<ContinuousClock.Instant?>(nil)
        // The writer sends four bytes and keeps the pipe open for a minute.
        let run = try await ExecutableRun.run(program: "/bin/sh", ["-c", "(printf MThd; sleep 60) >\"$1\" & exec \"$0\" render \"$1\" -o \"$2\"",
                                                                    cli, fifo, output]) { pid in
            try await eventually("composer-cli has the pipe open") {
                ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []).contains {
                    (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)")) == fifo
                }
            }
            sent.withLock { $0 = .now }
            kill(pid, signal)
        }
        let took = ContinuousClock.now - (sent.withLock { $0 } ?? .now)
        #expect(run.status == status)
        #expect(run.standardError == "composer-cli: the render was interrupted; nothing was written to \(output)\n")
        // The signal ends the read, not the writer's minute: how soon the process is gone after
        // it is the scheduler's business on a loaded machine (1.6 s beside two CPU hogs).
        #expect(took < .seconds(10), "ended \(took) after the signal")
        #expect(!directory.entries().contains("slow.wav"))
    }

    @Test("controls that would change nothing or leave nothing to hear are one line each, and no file")
    func controlsWithNoEffect() async throws {
        let directory = TemporaryDirectory()
        let song = try GatedPlayEndToEndTests.song()
        let output = directory.path + "/x.wav"
        for (arguments, line) in [
            (["--loop-count", "3"], "composer-cli: --loop-count: has no loop to repeat: give --loop A-B with it"),
            (["--loop", "1-1", "--to", "2"], "composer-cli: --to: has no effect with --loop: the song ends where the loop ends (B in A-B); give one or the other"),
            (["--solo", "16"], "composer-cli: \(song): nothing would sound: with solo channel 16 no note is left to play"),
            (["--from", "3"], "composer-cli: \(song): there is no bar 3: the song has 2 bars"),
            (["--to", "3"], "composer-cli: \(song): there is no bar 3: the song has 2 bars"),
            (["--soundfont", "/nonexistent.sf2"], "composer-cli: soundfont /nonexistent.sf2 not found or not readable; check the path given (--soundfont or soundfont =)"),
        ] {
            let run = try await ExecutableRun.run("composer-cli", ["render", song, "-o", output] + arguments)
            #expect(run.status != 0 && run.standardError.split(separator: "\n").count == 1, "\(arguments): \(run.standardError)")
            #expect(run.standardError.hasPrefix(line), "\(arguments): \(run.standardError)")
            #expect(directory.entries().isEmpty, "\(arguments) left \(directory.entries())")
        }
    }

    /// Four bars of 4/4: 120 BPM for bars 1-2, 90 BPM from bar 3, a piano note on each bar's first beat.
    static func slowingSong() -> [UInt8] {
        func tempo(_ microseconds: Int) -> [UInt8] {
            [0xFF, 0x51, 0x03, UInt8(microseconds >> 16), UInt8(microseconds >> 8 & 0xFF), UInt8(microseconds & 0xFF)]
        }
        // Each event is its delta time, then the message; a bar is a half note sounding and a half note's rest.
        var body: [UInt8] = [0x00] + tempo(500_000) + [0x00, 0xC0, 0x00]
        for bar in 0..<4 {
            let rest = SMFBytes.variableLength(bar == 0 ? 0 : 960)
            body += bar == 2 ? rest + tempo(666_667) + [0x00, 0x90, 0x3C, 0x64] : rest + [0x90, 0x3C, 0x64]
            body += SMFBytes.variableLength(960) + [0x80, 0x3C, 0x00]
        }
        body += SMFBytes.variableLength(960) + [0xFF, 0x2F, 0x00]
        return Array("MThd".utf8) + [0, 0, 0, 6, 0, 0, 0, 1, 0x01, 0xE0] + Array("MTrk".utf8) + SMFBytes.bigEndian32(body.count) + body
    }

    @Test("render --tempo 96bpm writes the same file as --tempo 80% for a song opening at 120 BPM, wherever it starts: one factor for the whole song")
    func beatsPerMinuteIsTheOpeningTempoScaled() async throws {
        let directory = TemporaryDirectory()
        let song = directory.path + "/slowing.mid"
        try Data(Self.slowingSong()).write(to: URL(fileURLWithPath: song))
        for from in ["1", "3"] {
            let bpm = directory.path + "/bpm-\(from).wav", percent = directory.path + "/percent-\(from).wav"
            let a = try await ExecutableRun.run("composer-cli", ["render", song, "-o", bpm, "--from", from, "--tempo", "96bpm"])
            let b = try await ExecutableRun.run("composer-cli", ["render", song, "-o", percent, "--from", from, "--tempo", "80%"])
            #expect(a.status == 0 && b.status == 0, "\(a.standardError)\(b.standardError)")
            let (first, second) = (try Data(contentsOf: URL(fileURLWithPath: bpm)), try Data(contentsOf: URL(fileURLWithPath: percent)))
            #expect(first == second, "--from \(from): 96bpm and 80% differ (\(first.count) and \(second.count) bytes)")
        }
    }

    @Test("render --loop 1-1 --loop-count 3: the second and third passes of a 2 s bar are alike to the sample, 88256 frames apart (whole blocks)")
    func loopPassesAlike() async throws {
        let directory = TemporaryDirectory()
        let output = directory.path + "/loop.wav"
        let run = try await ExecutableRun.run("composer-cli", ["render", try GatedPlayEndToEndTests.song(), "-o", output,
                                                               "--loop", "1-1", "--loop-count", "3"])
        #expect(run.status == 0, "\(run.standardError)")
        let mono = try WAVFile(path: output).monoFloat
        let pass = 88_256  // 2 s at 44.1 kHz, 88200 frames, rounded up to FluidSynth's 64-frame blocks
        #expect(mono.count >= 3 * pass, "\(mono.count) frames")
        func rms(_ values: ArraySlice<Float>) -> Double { (values.reduce(0) { $0 + Double($1 * $1) } / Double(values.count)).squareRoot() }
        let second = mono[pass..<(pass + 80_000)], third = mono[(2 * pass)..<(2 * pass + 80_000)]
        let apart = rms(ArraySlice(zip(second, third).map { $0 - $1 }))
        #expect(rms(second) > 0.01 && apart < rms(second) / 100, "passes 2 and 3 differ by \(apart) RMS against \(rms(second))")
    }

    @Test("-o at a named pipe is one line and the pipe stays a pipe: the finished WAV is never renamed over a device or a FIFO")
    func outputOverANode() async throws {
        let directory = TemporaryDirectory()
        let fifo = directory.path + "/out.wav"
        #expect(mkfifo(fifo, 0o644) == 0)
        let run = try await ExecutableRun.run("composer-cli", ["render", try GatedPlayEndToEndTests.song(), "-o", fifo])
        #expect(run.status == 1)
        #expect(run.standardError == "composer-cli: cannot write WAV file \(fifo): it is a named pipe (FIFO), not a file to write a WAV into\n",
                "\(run.standardError)")
        var info = stat()
        #expect(stat(fifo, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO, "the FIFO was replaced")
        #expect(directory.entries() == ["out.wav"])
    }

    @Test("a write error midway (the file-size limit) removes the partial file and says why")
    func writeErrorRemovesPartial() async throws {
        let directory = TemporaryDirectory()
        let song = try longSong(in: directory)
        let cli = ExecutableRun.productsDirectory.appendingPathComponent("composer-cli").path
        // 10 MB at most per file, and EFBIG instead of SIGXFSZ past it.
        let run = try await ExecutableRun.run(program: "/bin/sh", ["-c", "trap '' XFSZ; ulimit -f 20000; exec \"$0\" \"$@\"",
                                                                    cli, "render", song, "-o", directory.path + "/rest.wav"])
        #expect(run.status == 1)
        #expect(run.standardError == "composer-cli: cannot write WAV file \(directory.path)/rest.wav: File too large\n")
        #expect(directory.entries() == ["rest.mid"])
    }

    @Test("render --from 2 --to 2 --transpose -2 writes bar 2 alone (--to includes its bar), a tone lower; a bar the song lacks is one line and no file")
    func composersControls() async throws {
        let directory = TemporaryDirectory()
        let song = directory.path + "/three-bars.mid"
        // Three bars of 4/4 at 120 BPM, an A4 on the recorder half a second into each.
        try Data(ClientSongs.smf(program: 74, notes: [(69, 0.5, 1.5), (69, 2.5, 3.5), (69, 4.5, 5.5)], end: 6))
            .write(to: URL(fileURLWithPath: song))
        let output = directory.path + "/bar2.wav"
        let run = try await ExecutableRun.run("composer-cli", ["render", song, "-o", output, "--from", "2", "--to", "2", "--transpose", "-2"])
        #expect(run.status == 0, "\(run.standardError)")
        let wav = try WAVFile(path: output)
        #expect(wav.seconds >= 2 && wav.seconds <= 3.01, "rendered \(wav.seconds) s")
        let mono = wav.monoFloat
        let first = try #require(WAVAnalysis.firstSound(mono, sampleRate: wav.sampleRate))
        #expect(abs(first - 0.5) < 0.01, "bar 2's note sounds at \(first) s, not half a second into the render")
        let middle = mono[Int(0.8 * Double(wav.sampleRate))..<Int(1.3 * Double(wav.sampleRate))]
        let g4 = WAVAnalysis.energy(at: 392, in: middle, sampleRate: wav.sampleRate)
        let a4 = WAVAnalysis.energy(at: 440, in: middle, sampleRate: wav.sampleRate)
        #expect(g4 > 100 * a4, "G4 \(g4), A4 \(a4)")

        let missing = directory.path + "/bar9.wav"
        let refused = try await ExecutableRun.run("composer-cli", ["render", song, "-o", missing, "--from", "9"])
        #expect(refused.status == 1)
        #expect(refused.standardError == "composer-cli: \(song): there is no bar 9: the song has 3 bars\n")
        #expect(!FileManager.default.fileExists(atPath: missing))
    }

    @Test("render --help says what happens to songs too long for a WAV file")
    func helpSaysNoRF64() async throws {
        let run = try await ExecutableRun.run("composer-cli", ["render", "--help"])
        #expect(run.standardOutput.contains("--max-duration"))
        #expect(run.standardOutput.contains("no RF64 file is written"))
    }
}
