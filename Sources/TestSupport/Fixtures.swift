import Foundation
import MIDI
import Playback

/// Hand-built songs and per-test scratch space: the engine is tested on songs whose every event
/// we chose, so what the WAV should contain is known exactly.
public enum Fixtures {
    /// Acoustic Grand Piano: a sharp attack, so onsets are easy to place in time.
    public static let piano: UInt8 = 0
    /// Recorder: in TimGM6mb the purest tone (its octave is 50 dB below the fundamental), so a
    /// pitch lands in one frequency bin. Flute (73) carries a strong second harmonic.
    public static let recorder: UInt8 = 74

    /// One note per entry, on channel 0 with `program`; the song lasts `duration` seconds.
    public static func song(program: UInt8, notes: [(key: UInt8, on: Double, off: Double)], duration: Double) -> MIDISong {
        var events = [MIDITimedEvent(seconds: 0, message: .programChange(channel: 0, program: program))]
        for note in notes {
            events.append(MIDITimedEvent(seconds: note.on, message: .noteOn(channel: 0, key: note.key, velocity: 100)))
            events.append(MIDITimedEvent(seconds: note.off, message: .noteOff(channel: 0, key: note.key, velocity: 0)))
        }
        events.sort { $0.seconds < $1.seconds }
        return MIDISong(events: events, durationSeconds: duration, title: "fixture")
    }

    /// A fresh directory for one test; tests run in parallel and never share paths.
    public static func temporaryDirectory() throws -> URL {
        try TemporaryDirectory.makeURL(prefix: "speakerd-playback")
    }

    /// Loads the default SoundFont (Debian's timgm6mb-soundfont, installed by scripts/setup).
    public static func soundFont() async throws -> SoundFont {
        try await SoundFont.load()
    }
}
