import Testing
@testable import SpeakerCore

@Suite("Status lines a person reads")
struct DaemonPhaseTests {
    @Test("each phase says what the daemon is waiting for", arguments: [
        (DaemonPhase.connecting(speakerName: "JBL Flip 5"), "Connecting to JBL Flip 5…"),
        (.reconnecting(speakerName: "JBL Flip 5", retryIn: .milliseconds(7_600)), "JBL Flip 5 is out of reach; retrying in 8 s"),
        (.blocked(.noBlueZ), "Waiting for bluetoothd (org.bluez is not on the bus; is bluetooth.service running?)"),
        (.blocked(.adapterBlocked(adapter: "hci0")), "Bluetooth adapter hci0 is blocked by rfkill; run 'rfkill unblock bluetooth'"),
        (.blocked(.noAdapter(configured: "hci1")), "Waiting for Bluetooth adapter hci1 to be plugged in"),
        (.waitingForPick, "Waiting for a speaker: run 'composer-cli scan', then 'composer-cli connect ADDRESS'"),
        (.playing(file: "song.mid", speakerName: "JBL Flip 5"), "Playing song.mid on JBL Flip 5"),
    ])
    func statusLines(phase: DaemonPhase, expected: String) {
        #expect(phase.statusLine == expected)
    }
}
