import Foundation
import Glibc
import MIDI
@testable import Playback
import TestSupport
import Testing

/// libfluidsynth is opened on first use (dlopen), so its absence must surface as a typed error
/// with one clear line, never as a crash or a failure to start.
@Suite("FluidSynth loaded on first use")
struct FluidSynthLibraryTests {
    @Test("a missing libfluidsynth is one clear line naming the library and what to install")
    func missingLibrary() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("libfluidsynth.so.3").path
        let error = #expect(throws: SoundFontError.self) { try FluidSynthLibrary.open(path) }
        guard case let .libraryUnavailable(reason)? = error else {
            Issue.record("expected libraryUnavailable, got \(String(describing: error))")
            return
        }
        #expect(reason.contains(path))
        let line = try #require(error?.description)
        #expect(line.hasPrefix("FluidSynth is not available ("))
        #expect(line.hasSuffix("; install libfluidsynth3"))
        #expect(!line.contains("\n"))
    }

    @Test("a library that is not FluidSynth is rejected by the first function it lacks")
    func wrongLibrary() {
        let error = #expect(throws: SoundFontError.self) { try FluidSynthLibrary.open("libc.so.6") }
        #expect(error == .libraryUnavailable(reason: "libc.so.6 has no function new_fluid_settings; FluidSynth 2 is needed"))
    }

    @Test("the installed libfluidsynth opens with every function speakerd calls")
    func installedLibrary() throws {
        _ = try FluidSynthLibrary.api()
        let synthesizer = try Synthesizer(sampleRate: 22_050)
        #expect(synthesizer.sampleRate == 22_050)
    }

    /// Several songs taking up FluidSynth at once in a process that has not used it yet.
    ///
    /// What the parallel test run did to LiveControlAudioTests (its first renders 2.7 times as
    /// loud), and what a preview starting beside the daemon's preload would do. FluidSynth sets
    /// itself up once per process, so each try is a fresh process (an exit test), held to one CPU:
    /// there a thread setting FluidSynth up is preempted by the others, as on a loaded machine.
    /// Without `FluidSynthLibrary.completeOneTimeSetUp` about a third of the tries heard some songs
    /// louder (14 of 40 measured); ten tries find it in nearly every run.
    @Test("songs started together in a fresh process each sound as one started alone")
    func songsStartedTogether() async {
        for _ in 0..<10 {
            await #expect(processExitsWith: .success) {
                FluidSynthLibraryTests.holdProcessToOneCPU()
                let song = Fixtures.song(program: Fixtures.recorder, notes: [(key: 60, on: 0, off: 0.5)], duration: 0.5)
                let together = try await withThrowingTaskGroup(of: [Int16].self) { group in
                    for _ in 0..<8 {
                        group.addTask { try FluidSynthLibraryTests.render(song, with: try await SoundFont.load()) }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                let alone = try FluidSynthLibraryTests.render(song, with: try await SoundFont.load())
                let levels = together.map { Int(FluidSynthLibraryTests.rms($0).rounded()) }
                #expect(together.allSatisfy { $0 == alone },
                        "RMS of \(levels.count) songs started together: \(levels); of the same song alone: \(Int(FluidSynthLibraryTests.rms(alone).rounded()))")
            }
        }
    }

    /// `song` rendered to its end, left channel.
    static func render(_ song: MIDISong, with soundFont: SoundFont) throws -> [Int16] {
        let source = try PlaybackSource(song: song, soundFont: soundFont)
        var samples: [Int16] = []
        var buffer = [Int16](repeating: 0, count: 2_048)
        while true {
            let produced = buffer.withUnsafeMutableBufferPointer { source.render(into: $0) }
            samples += stride(from: 0, to: produced * 2, by: 2).map { buffer[$0] }
            if produced < buffer.count / 2 { return samples }
        }
    }

    static func rms(_ samples: [Int16]) -> Double {
        (samples.reduce(0) { $0 + Double($1) * Double($1) } / Double(max(samples.count, 1))).squareRoot()
    }

    /// Every thread of the process, and so every thread it starts later, on the first CPU it may use.
    /// (sched_getaffinity and sched_setaffinity are GNU extensions the Glibc module leaves out.)
    static func holdProcessToOneCPU() {
        typealias Affinity = @convention(c) (pid_t, Int, UnsafeMutableRawPointer) -> Int32
        guard let get = dlsym(nil, "sched_getaffinity"), let set = dlsym(nil, "sched_setaffinity") else { return }
        let getAffinity = unsafeBitCast(get, to: Affinity.self)
        let setAffinity = unsafeBitCast(set, to: Affinity.self)
        // A cpu_set_t: 1,024 bits.
        var allowed = [UInt8](repeating: 0, count: 128)
        guard getAffinity(0, allowed.count, &allowed) == 0, let index = allowed.firstIndex(where: { $0 != 0 }) else { return }
        var one = [UInt8](repeating: 0, count: 128)
        one[index] = allowed[index] & (0 &- allowed[index])
        let threads = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        for thread in threads.compactMap({ pid_t($0) }) {
            _ = setAffinity(thread, one.count, &one)
        }
    }
}
