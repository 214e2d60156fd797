import Foundation
@testable import Playback
import TestSupport
import Testing

@Suite("SoundFont loading")
struct SoundFontTests {
    @Test("the default GM SoundFont loads")
    func defaultLoads() async throws {
        let font = try await SoundFont.load()
        #expect(font.path == SoundFont.defaultPath)
        #expect(font.sampleRate == 44_100)
    }

    @Test("a missing SoundFont the person named is reported by path, without telling them to pass the option they passed")
    func missing() async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("absent.sf2").path
        let error = await #expect(throws: SoundFontError.missing(path: path)) { try await SoundFont.load(path: path) }
        #expect(error?.description == "soundfont \(path) not found or not readable; check the path given (--soundfont or soundfont =)")
    }

    @Test("a directory given as a SoundFont is reported as missing, not crashed on")
    func directory() async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        await #expect(throws: SoundFontError.missing(path: directory.path)) { try await SoundFont.load(path: directory.path) }
    }

    @Test("a file that is not a SoundFont is rejected as invalid")
    func notASoundFont() async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("fake.sf2").path
        try Data("this is not a soundfont".utf8).write(to: URL(fileURLWithPath: path))
        await #expect(throws: SoundFontError.invalid(path: path)) { try await SoundFont.load(path: path) }
    }

    @Test("a truncated SoundFont is rejected as invalid")
    func truncatedSoundFont() async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("truncated.sf2").path
        let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: SoundFont.defaultPath))
        let head = try handle.read(upToCount: 4096) ?? Data()
        try handle.close()
        try head.write(to: URL(fileURLWithPath: path))
        await #expect(throws: SoundFontError.invalid(path: path)) { try await SoundFont.load(path: path) }
    }

    @Test("one SoundFont plays one song at a time, and is free again once the song ends")
    func oneSongAtATime() async throws {
        let font = try await SoundFont.load()
        let song = Fixtures.song(program: 0, notes: [(60, 0, 0.2)], duration: 0.2)
        var first: PlaybackSource? = try PlaybackSource(song: song, soundFont: font)
        #expect(throws: SoundFontError.inUse(path: font.path)) { try PlaybackSource(song: song, soundFont: font) }
        first = nil
        _ = first
        let summary = try await OfflineRenderer.renderDiscarding(song, soundFont: font)
        #expect(summary.frames >= Int(0.2 * 44_100))
    }
}
