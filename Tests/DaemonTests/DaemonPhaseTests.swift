import AsyncSignals
@testable import Daemon
@testable import SpeakerdAPI
import TestSupport
import Testing

@Suite("Status lines a person reads")
struct DaemonPhaseTests {
    @Test("each phase says what the daemon is waiting for", arguments: [
        (DaemonPhase.notReady(.connecting("JBL Flip 5")), "Connecting to JBL Flip 5…"),
        (.notReady(.unreachable("JBL Flip 5", retryIn: .milliseconds(7_600))), "JBL Flip 5 is out of reach; retrying in 8 s"),
        (.notReady(.blocked(.noBlueZ)), "Waiting for bluetoothd (org.bluez is not on the bus; is bluetooth.service running?)"),
        (.notReady(.blocked(.adapterBlocked(adapter: "hci0"))), "Bluetooth adapter hci0 is blocked by rfkill; run 'rfkill unblock bluetooth'"),
        (.notReady(.blocked(.noAdapter(configured: "hci1"))), "Waiting for Bluetooth adapter hci1 to be plugged in"),
        (.notReady(.waitingForPick), "Waiting for a speaker: run 'composer-cli scan', then 'composer-cli connect ADDRESS'"),
        (.notReady(.userDisconnected("JBL Flip 5")), "Disconnected from JBL Flip 5 as asked; 'composer-cli connect' reconnects"),
        (.starting, "Starting…"),
        (.playing(file: "song.mid", speakerName: "JBL Flip 5"), "Playing song.mid on JBL Flip 5"),
        (.paused(file: "song.mid", speakerName: "JBL Flip 5"), "Paused song.mid on JBL Flip 5"),
    ])
    func statusLines(phase: DaemonPhase, expected: String) {
        #expect(phase.statusLine == expected)
    }

    @Test("status shows a paused song as paused, in the daemon's own sentence and the playback line")
    func pausedStatus() {
        #expect(SampleReports.paused.humanReadable == """
            Status:    Paused song.mid on JBL Flip 5
            Readiness: ready to play
            Speaker:   JBL Flip 5 (11:22:33:AA:BB:CC), connected
            Playback:  paused song.mid 1:12 / 3:04
            """)
        #expect(DaemonPhase.paused(file: "song.mid", speakerName: "JBL Flip 5").statusLine == SampleReports.paused.message)
    }
}
