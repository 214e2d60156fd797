import Foundation
@testable import Playback
import SpeakerCore
import Testing

@Suite("Playback status")
struct PlaybackStatusTests {
    @Test("playback status encodes with the stable --json keys")
    func statusKeys() throws {
        let status = PlaybackStatus(state: "playing", file: "song.mid", positionSeconds: 1.5, durationSeconds: 4)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = String(decoding: try encoder.encode(status), as: UTF8.self)
        #expect(json == #"{"durationSeconds":4,"file":"song.mid","positionSeconds":1.5,"state":"playing"}"#)
    }
}
