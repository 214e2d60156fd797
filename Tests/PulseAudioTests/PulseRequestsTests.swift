import Foundation
@testable import PulseAudio
import TestSupport
import Testing

/// The short requests speakerd makes of a sound server through libpulse (a card's profile),
/// against a real one. What asks for them, and when, is AudioPath's (its
/// HeadsetCardTests).
@Suite("Short requests to a sound server")
struct PulseRequestsTests {
    @Test("libpulse asks a real server for the switch and brings back its refusal of a card it does not have",
          .timeLimit(.minutes(1)), arguments: SoundServerKind.allCases)
    func realServerAnswers(kind: SoundServerKind) async throws {
        let directory = try TemporaryDirectory.makeURL()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await PulseAudioServer.start(in: directory, kind: kind)
        let problem = await PulseRequests.switchCardProfile(server: server.address, card: 4242, to: "a2dp_sink")
        #expect(problem == "No such entity", "\(String(describing: problem))")
        let noServer = await PulseRequests.switchCardProfile(server: "unix:\(directory.path)/none", card: 1, to: "a2dp_sink")
        #expect(noServer == "Connection refused", "\(String(describing: noServer))")
    }
}
