import AudioPath
import Testing

/// `--audio-output` and `audio_output`, as a person writes them: every documented form is read,
/// and a value that names no output is refused in one line that says what it lacks.
@Suite("Audio output settings")
struct AudioOutputSettingTests {
    @Test("the documented forms parse", arguments: [
        ("auto", AudioOutputSetting.automatic),
        ("file:/tmp/out.wav", .file(path: "/tmp/out.wav")),
        ("alsa:default", .alsa(device: "default")),
        ("alsa:bluealsa:DEV=11:22:33:44:55:66,PROFILE=a2dp", .alsa(device: "bluealsa:DEV=11:22:33:44:55:66,PROFILE=a2dp")),
        ("pulseaudio", .pulseAudio),
        ("pulse", .pulseAudio),
        ("null", .null),
        ("  NULL ", .null),
        ("File:/tmp/out.wav", .file(path: "/tmp/out.wav")),
    ])
    func parses(text: String, expected: AudioOutputSetting) throws {
        #expect(try AudioOutputSetting(parsing: text) == expected)
    }

    @Test("a setting prints back in the form it parses from")
    func roundTrips() throws {
        for setting in [AudioOutputSetting.automatic, .file(path: "/a/b.wav"), .alsa(device: "hw:0"), .pulseAudio, .null] {
            #expect(try AudioOutputSetting(parsing: setting.description) == setting)
        }
    }

    @Test("bad values are refused in one line that says what the value lacks", arguments: [
        ("", AudioOutputSetting.accepted),
        ("   ", AudioOutputSetting.accepted),
        ("speaker", AudioOutputSetting.accepted),
        ("mp3:/tmp/x.mp3", AudioOutputSetting.accepted),
        ("file:", "a path after file:"),
        ("file:out.wav", "an absolute path after file:, as speakerd runs in /"),
        ("file:/tmp/", "a file's path after file:, not a directory's"),
        ("alsa:", "an ALSA device after alsa:"),
        ("alsa:hw 0", "an ALSA device without blanks after alsa:"),
        ("null:/dev/null", "null alone, with nothing after it"),
        ("file:/tmp/a\u{07}.wav", "\(AudioOutputSetting.accepted), without control characters"),
        ("alsa:hw:0\nnull", "\(AudioOutputSetting.accepted), without control characters"),
    ])
    func rejects(text: String, expected: String) {
        let error = #expect(throws: AudioOutputSettingError.self) { try AudioOutputSetting(parsing: text) }
        #expect(error?.expected == expected)
        let message = error?.description ?? ""
        #expect(message.hasPrefix("bad value '"))
        #expect(message.hasSuffix("for audio_output (expected \(expected))"))
        #expect(!message.unicodeScalars.contains { $0.properties.generalCategory == .control })
    }
}
