import Foundation
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
}
