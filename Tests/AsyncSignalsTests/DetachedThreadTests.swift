@testable import AsyncSignals
import Foundation
import Synchronization
import Testing

/// The plain threads speakerd's blocking playback work runs on (soundfont loads, driver deletion).
@Suite("Detached threads for blocking work")
struct DetachedThreadTests {
    @Test("the body runs on a thread of its own that carries the given name")
    func runsNamed() async {
        let caller = Self.threadID()
        let seen: (name: String, thread: pthread_t) = await withCheckedContinuation { continuation in
            DetachedThread.start(name: "soundfont-load") {
                let comm = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
                continuation.resume(returning: (comm.trimmingCharacters(in: .newlines), Self.threadID()))
            }
        }
        #expect(seen.name == "soundfont-load")
        #expect(seen.thread != caller)
    }

    @Test("a name longer than the kernel keeps is cut to 15 bytes, never inside a character")
    func longNames() {
        #expect(DetachedThread.threadName("audio-dev-close") == "audio-dev-close")
        #expect(DetachedThread.threadName("audio-device-close") == "audio-device-cl")
        #expect(DetachedThread.threadName("lecture-é-é-é-é") == "lecture-é-é-")  // é is 2 bytes: 14, not 16
        #expect(DetachedThread.threadName("") == "")
    }

    private static func threadID() -> pthread_t { pthread_self() }
}
