@testable import Playback
import Testing

@Suite("Audio output specs")
struct AudioOutputSpecTests {
    @Test("the documented forms parse", arguments: [
        ("file:/tmp/out.wav", AudioOutputSpec.file(path: "/tmp/out.wav")),
        ("alsa:default", .alsa(device: "default")),
        ("alsa:bluealsa:DEV=11:22:33:44:55:66,PROFILE=a2dp", .alsa(device: "bluealsa:DEV=11:22:33:44:55:66,PROFILE=a2dp")),
        ("pulseaudio", .pulseAudio),
        ("pulse", .pulseAudio),
        ("null", .null),
        ("  NULL ", .null),
    ])
    func parses(text: String, expected: AudioOutputSpec) throws {
        #expect(try AudioOutputSpec(parsing: text) == expected)
    }

    @Test("a spec prints back in the form it parses from")
    func roundTrips() throws {
        for spec in [AudioOutputSpec.file(path: "/a/b.wav"), .alsa(device: "hw:0"), .pulseAudio, .null] {
            #expect(try AudioOutputSpec(parsing: spec.description) == spec)
        }
    }

    @Test("a connected speaker's default output is its BlueALSA A2DP PCM")
    func bluealsaDefault() {
        #expect(AudioOutputSpec.bluealsa(address: "aa:bb:cc:dd:ee:ff")
            == .alsa(device: "bluealsa:DEV=AA:BB:CC:DD:EE:FF,PROFILE=a2dp"))
    }

    @Test("bad specs are rejected with a one-line reason", arguments: [
        ("", AudioOutputSpecError.Problem.empty),
        ("   ", .empty),
        ("speaker", .unknownKind),
        ("mp3:/tmp/x.mp3", .unknownKind),
        ("file:", .missingPath),
        ("file:out.wav", .relativePath),
        ("file:/tmp/", .directoryPath),
        ("alsa:", .missingDevice),
        ("alsa:hw 0", .whitespaceInDevice),
        ("null:/dev/null", .unexpectedArgument(kind: "null")),
        ("file:/tmp/a\u{07}.wav", .controlCharacters),
    ])
    func rejects(text: String, problem: AudioOutputSpecError.Problem) {
        let error = #expect(throws: AudioOutputSpecError.self) { try AudioOutputSpec(parsing: text) }
        #expect(error?.problem == problem)
        let message = error?.description ?? ""
        #expect(message.hasPrefix("invalid audio output '"))
        #expect(message.hasSuffix("expected file:/PATH.wav, alsa:DEVICE, pulseaudio or null"))
        #expect(!message.contains("\n"))
    }
}
