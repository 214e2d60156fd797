import SpeakerdAPI
import Testing

@Suite("The daemon's readiness levels")
struct DaemonReadinessTests {
    @Test("the daemon's levels are ordered by start-up and print their stable names")
    func daemonLevels() {
        #expect(DaemonReadiness.allCases.sorted() == [.started, .bus, .adapter, .speakerConnected, .playbackReady])
        #expect(DaemonReadiness.speakerConnected.description == "speakerConnected")
        #expect(DaemonReadiness(rawValue: "playbackReady") == .playbackReady)
    }
}
