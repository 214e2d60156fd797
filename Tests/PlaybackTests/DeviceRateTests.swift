import Foundation
import MIDI
@testable import Playback
import TestSupport
import Testing

/// A song is rendered at its device's own rate (a Bluetooth sink at 48 kHz) from the one font
/// loaded at start-up at 44.1 kHz, so that nothing between speakerd and the speaker resamples it:
/// in the real-Bluetooth guest, pipewire-pulse resampling speakerd's 44.1 kHz stream took 7.5 s of
/// CPU in a 21 s scenario, 1.1 s once the stream came at the sink's 48 kHz.
@Suite("songs render at their device's own rate")
struct DeviceRateTests {
    /// A sustained A4, a second long, on the instrument the sound-server tests listen for
    /// (`ClientSongs.sustainedA4`: few overtones).
    static let a4 = Fixtures.song(program: 74, notes: [(69, 0, 1)], duration: 1)

    /// Renders `source` to its end (or `seconds`) as mono floats.
    static func render(_ source: PlaybackSource, seconds: Double? = nil) -> [Float] {
        var mono: [Float] = []
        var buffer = [Int16](repeating: 0, count: 1024 * 2)
        let limit = seconds.map { Int($0 * Double(source.sampleRate)) } ?? .max
        while mono.count < limit {
            let frames = buffer.withUnsafeMutableBufferPointer { source.render(into: $0) }
            guard frames > 0 else { break }
            for frame in 0..<frames {
                mono.append((Float(buffer[frame * 2]) + Float(buffer[frame * 2 + 1])) / 2 / Float(Int16.max))
            }
        }
        return mono
    }

    /// The A4's energy beside where a render at the wrong rate would put it: 440 × 48/44.1 Hz
    /// (played fast) and 440 × 44.1/48 Hz (played slow).
    static func expectA4(_ mono: [Float], at rate: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        let middle = mono[(mono.count / 4)..<(mono.count * 3 / 4)]
        let at440 = WAVAnalysis.energy(at: 440, in: middle, sampleRate: rate)
        let fast = WAVAnalysis.energy(at: 440 * 48_000 / 44_100, in: middle, sampleRate: rate)
        let slow = WAVAnalysis.energy(at: 440 * 44_100 / 48_000, in: middle, sampleRate: rate)
        #expect(at440 > 20 * fast && at440 > 20 * slow,
                "the A4 is not at 440 Hz at \(rate) Hz (energy \(at440) at 440, \(fast) at 479, \(slow) at 404)",
                sourceLocation: sourceLocation)
        #expect(WAVAnalysis.a4Windows(mono, sampleRate: rate).clean > 0, sourceLocation: sourceLocation)
    }

    @Test("a song for a 48 kHz device renders at 48 kHz from the font loaded at 44.1 kHz: its A4 is at 440 Hz and it lasts its second")
    func songAtTheDevicesRate() async throws {
        let font = try await Fixtures.soundFont()
        #expect(font.sampleRate == 44_100)
        let source = try PlaybackSource(song: Self.a4, soundFont: font, sampleRate: 48_000)
        #expect(source.sampleRate == 48_000)
        #expect(source.durationSeconds == 1)
        let mono = Self.render(source)
        #expect(mono.count >= 48_000 && mono.count < 48_000 + 48_000 * 2, "\(mono.count) frames for a 1 s song at 48 kHz")
        Self.expectA4(mono, at: 48_000)
    }

    @Test("a live control on a 48 kHz song plays its new timeline at 48 kHz too")
    func liveControlKeepsTheRate() async throws {
        let font = try await Fixtures.soundFont()
        let source = try PlaybackSource(song: Self.a4, soundFont: font, sampleRate: 48_000)
        _ = Self.render(source, seconds: 0.3)
        #expect(source.replaceSong(with: ArrangedSong(song: Self.a4)))
        let mono = Self.render(source)
        #expect(mono.count >= 48_000, "the new timeline is a second at 48 kHz; \(mono.count) frames")
        Self.expectA4(mono, at: 48_000)
    }

    @Test("the font plays one song at a time at any rate; the synthesiser made for a rate serves the next song at that rate")
    func oneSongAtATimeAtAnyRate() async throws {
        let font = try await Fixtures.soundFont()
        var first: PlaybackSource? = try PlaybackSource(song: Self.a4, soundFont: font, sampleRate: 48_000)
        #expect(throws: SoundFontError.inUse(path: font.path)) { try PlaybackSource(song: Self.a4, soundFont: font) }
        #expect(throws: SoundFontError.inUse(path: font.path)) { try PlaybackSource(song: Self.a4, soundFont: font, sampleRate: 48_000) }
        first = nil
        _ = first

        do {
            let atFontRate = try PlaybackSource(song: Self.a4, soundFont: font, sampleRate: 44_100)
            #expect(atFontRate.sampleRate == 44_100)
            Self.expectA4(Self.render(atFontRate), at: 44_100)
            atFontRate.stop()
        }

        let made = try font.lease(sampleRate: 48_000)
        font.releaseLease()
        let again = try font.lease(sampleRate: 48_000)
        font.releaseLease()
        #expect(made === again, "a second song at 48 kHz made another synthesiser")
        #expect(made.sampleRate == 48_000)
    }

    @Test("a device rate no synthesiser should render at (0, 1 Hz, 10 MHz: a broken reply) falls back to the font's rate", arguments: [0, 1, 10_000_000])
    func implausibleRate(rate: Int) async throws {
        let font = try await Fixtures.soundFont()
        let source = try PlaybackSource(song: Self.a4, soundFont: font, sampleRate: rate)
        #expect(source.sampleRate == 44_100)
    }
}
