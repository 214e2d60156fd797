import MIDI
import Testing

/// What the reader must make of each corpus file. Durations and note counts were cross-checked
/// against an independent reader (Python mido 1.3: same figures for every file it can read).
enum CorpusExpectation: Sendable, CustomStringConvertible {
    /// Parses, with this many sounding note-ons and this duration by the tempo map.
    case plays(notes: Int, seconds: Double)
    /// Parses, has no notes (controllers, sysex or silence only) and lasts this long.
    case silent(seconds: Double)
    /// Throws a `MIDIFileError` whose description contains this text.
    case rejected(because: String)

    var description: String {
        switch self {
        case .plays(let notes, let seconds): "plays \(notes) notes over \(seconds) s"
        case .silent(let seconds): "silent for \(seconds) s"
        case .rejected(let because): "rejected: \(because)"
        }
    }
}

/// The explicit classification of every file: a new file, a removed one or a changed verdict fails.
let corpusExpectations: [String: CorpusExpectation] = [
    "LICENSE.md": .rejected(because: "not a MIDI file"),
    "test-2-tracks-type-0.mid": .plays(notes: 16, seconds: 4.5),  // format 0 with 2 tracks: played as format 1, with a warning
    "test-2-tracks-type-1.mid": .plays(notes: 16, seconds: 4.5),
    "test-2-tracks-type-2.mid": .plays(notes: 16, seconds: 9.0),  // sequential: 4.5 s each
    "test-all-gm-percussion.mid": .plays(notes: 183, seconds: 137.25),
    "test-all-gm-sounds.mid": .plays(notes: 512, seconds: 352.0),
    "test-all-gm2-sounds.mid": .plays(notes: 1060, seconds: 728.75),
    "test-all-gs-sounds.mid": .plays(notes: 5044, seconds: 3467.75),
    "test-all-microsoft-gs-wavetable-synth-sounds.mid": .plays(notes: 904, seconds: 621.5),
    "test-all-xg-sounds.mid": .plays(notes: 4560, seconds: 3135.0),
    "test-c-major-scale.mid": .plays(notes: 8, seconds: 4.0),
    "test-control-00-20-bank-select.mid": .plays(notes: 8, seconds: 5.5),
    "test-control-40-damper.mid": .plays(notes: 8, seconds: 8.0),
    "test-control-41-portamento.mid": .plays(notes: 8, seconds: 7.0),
    "test-control-54-portamento-control.mid": .plays(notes: 1, seconds: 3.0),
    "test-control-7c-omni-mode-off.mid": .silent(seconds: 0.5),
    "test-control-7d-omni-mode-on.mid": .silent(seconds: 0.5),
    "test-control-7e-mono-mode-on.mid": .silent(seconds: 0.5),
    "test-control-7f-poly-mode-on.mid": .silent(seconds: 0.5),
    "test-corrupt-file-extra-byte.mid": .plays(notes: 8, seconds: 4.0),  // trailing byte after the track: ignored
    "test-corrupt-file-missing-byte.mid": .rejected(because: "truncated: track 1 ends at byte 267 but its chunk says 268"),
    "test-empty-file.mid": .rejected(because: "file is empty"),
    "test-empty.mid": .silent(seconds: 0),
    "test-gm2-doggy-78-00-38-4c.mid": .plays(notes: 3, seconds: 1.5),
    "test-gm2-doggy-79-01-7b.mid": .plays(notes: 3, seconds: 1.5),
    "test-gs-doggy-01-00-7b.mid": .plays(notes: 3, seconds: 1.5),
    "test-illegal-message-all.mid": .rejected(because: "byte 197: undefined system message 0xF4"),
    "test-illegal-message-f1-xx.mid": .plays(notes: 8, seconds: 4.0),
    "test-illegal-message-f2-xx-xx.mid": .plays(notes: 8, seconds: 4.0),
    "test-illegal-message-f3-xx.mid": .plays(notes: 8, seconds: 4.0),
    "test-illegal-message-f4.mid": .rejected(because: "byte 205: undefined system message 0xF4"),
    "test-illegal-message-f5.mid": .rejected(because: "byte 205: undefined system message 0xF5"),
    "test-illegal-message-f6.mid": .plays(notes: 8, seconds: 4.0),
    "test-illegal-message-f8.mid": .plays(notes: 8, seconds: 4.0),
    "test-illegal-message-f9.mid": .plays(notes: 8, seconds: 4.0),
    "test-illegal-message-fa.mid": .plays(notes: 8, seconds: 4.0),
    "test-illegal-message-fb.mid": .plays(notes: 8, seconds: 4.0),
    "test-illegal-message-fc.mid": .plays(notes: 8, seconds: 4.0),
    "test-illegal-message-fd.mid": .plays(notes: 8, seconds: 4.0),
    "test-illegal-message-fe.mid": .plays(notes: 8, seconds: 4.0),
    "test-karaoke-kar.mid": .plays(notes: 29, seconds: 10.600005),
    "test-multichannel-chords-0.mid": .plays(notes: 24, seconds: 4.0),
    "test-multichannel-chords-1.mid": .plays(notes: 24, seconds: 4.0),
    "test-multichannel-chords-2.mid": .plays(notes: 24, seconds: 4.0),
    "test-multichannel-chords-3.mid": .plays(notes: 24, seconds: 4.0),
    "test-non-midi-track.mid": .plays(notes: 8, seconds: 4.0),  // "Junk" chunk before the track: skipped
    "test-not-a-midi-file.mid": .rejected(because: "not a MIDI file: starts with 'not '"),
    "test-note-on-velocity.mid": .plays(notes: 9, seconds: 4.5),
    "test-rpn-00-00-pitch-bend-range.mid": .plays(notes: 5, seconds: 29.5),
    "test-rpn-00-01-fine-tuning.mid": .plays(notes: 25, seconds: 12.5),
    "test-rpn-00-02-coarse-tuning.mid": .plays(notes: 8, seconds: 4.0),
    "test-rpn-00-05-modulation-depth-range.mid": .plays(notes: 5, seconds: 17.0),
    "test-running-status-metaevent.mid": .plays(notes: 8, seconds: 4.0),  // FluidSynth: 0 frames
    "test-running-status-sysex.mid": .plays(notes: 8, seconds: 4.0),  // FluidSynth: 0 frames
    "test-silence-all-notes-off.mid": .silent(seconds: 5.0),
    "test-silence-end-of-track.mid": .silent(seconds: 5.0),
    "test-silence-text-metaevent.mid": .silent(seconds: 5.0),
    "test-smpte-offset.mid": .plays(notes: 8, seconds: 4.0),  // the 1-minute offset is not silence
    "test-sysex-7e-06-01-id-request.mid": .silent(seconds: 0.5),
    "test-sysex-7e-09-01-gm1-enable.mid": .silent(seconds: 0.5),
    "test-sysex-7e-09-02-gm-disable.mid": .silent(seconds: 0.5),
    "test-sysex-7e-09-03-gm2-enable.mid": .silent(seconds: 0.5),
    "test-sysex-7f-04-03-master-fine-tuning.mid": .plays(notes: 5, seconds: 2.5),
    "test-sysex-7f-04-04-master-coarse-tuning.mid": .plays(notes: 8, seconds: 4.0),
    "test-sysex-7x-08-0x-scale-tuning.mid": .plays(notes: 65, seconds: 34.5),
    "test-sysex-gs-40-1x-15-drum-part-change.mid": .plays(notes: 8, seconds: 6.0),
    "test-sysex-gs-40-1x-4x-scale-tuning.mid": .plays(notes: 3, seconds: 1.5),
    "test-syx-7e-06-01-id-request.syx": .rejected(because: "not a MIDI file"),  // a raw sysex dump, not an SMF
    "test-track-length.mid": .plays(notes: 1, seconds: 1.5),  // End of Track a half note after the last note-off
    "test-vlq-2-byte.mid": .plays(notes: 8, seconds: 4.0),
    "test-vlq-3-byte.mid": .plays(notes: 8, seconds: 4.0),
    "test-vlq-4-byte.mid": .plays(notes: 8, seconds: 4.0),
    "test-xg-doggy-40-00-30.mid": .plays(notes: 3, seconds: 1.5),
    "test-xg-doggy-7e-00-00-54.mid": .plays(notes: 3, seconds: 1.5),
]

@Suite("The jazz-soft corpus")
struct CorpusClassificationTests {
    @Test("every file in the corpus has an explicit expected verdict, and every verdict a file")
    func everyFileIsClassified() {
        let names = Corpus.fileNames()
        #expect(!names.isEmpty)
        #expect(Set(names).subtracting(corpusExpectations.keys).sorted() == [], "files without a verdict")
        #expect(Set(corpusExpectations.keys).subtracting(names).sorted() == [], "verdicts for missing files")
    }

    @Test("each corpus file is played or rejected as classified", arguments: corpusExpectations.keys.sorted())
    func fileMatchesItsVerdict(name: String) throws {
        guard let bytes = Corpus.bytes(of: name), let expected = corpusExpectations[name] else { return }
        let result = Result { () throws(MIDIFileError) in try MIDIFileReader.read(bytes) }
        switch (expected, result) {
        case (.plays(let notes, let seconds), .success(let song)):
            #expect(song.soundingNoteCount == notes)
            #expect(abs(song.durationSeconds - seconds) < 1e-6, "duration \(song.durationSeconds) s")
            #expect(song.durationSeconds > 0)
            #expect(song.events.last.map { $0.seconds <= song.durationSeconds } ?? false)
        case (.silent(let seconds), .success(let song)):
            #expect(song.soundingNoteCount == 0)
            #expect(abs(song.durationSeconds - seconds) < 1e-6, "duration \(song.durationSeconds) s")
        case (.rejected(let because), .failure(let error)):
            #expect(error.description.contains(because), "\(error)")
            #expect(!error.description.contains("\n"))
        case (_, .success(let song)):
            Issue.record("\(name) should be \(expected) but it parsed: \(song.events.count) events, \(song.durationSeconds) s")
        case (_, .failure(let error)):
            Issue.record("\(name) should be \(expected) but was rejected: \(error)")
        }
    }
}

extension MIDISong {
    /// Note-ons with a non-zero velocity (velocity 0 is a note-off in disguise).
    var soundingNoteCount: Int {
        events.count { if case .noteOn(_, _, let velocity) = $0.message { velocity > 0 } else { false } }
    }
}
