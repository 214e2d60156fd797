@testable import TestSupport
@testable import BlueZ
import Testing

@Suite("BlueZ errors")
struct BlueZErrorTests {
    @Test("every documented org.bluez.Error name becomes its own typed kind and back",
          arguments: [
            "Failed", "InProgress", "NotReady", "NotSupported", "NotAuthorized", "NotAvailable",
            "NotPermitted", "AlreadyExists", "DoesNotExist", "InvalidArguments", "AlreadyConnected",
            "NotConnected", "NoSuchAdapter", "AgentNotAvailable", "AuthenticationFailed",
            "AuthenticationCanceled", "AuthenticationRejected", "AuthenticationTimeout",
            "ConnectionAttemptFailed", "BREDR.ProfileUnavailable", "Rejected", "Canceled",
          ])
    func roundTrip(name: String) throws {
        let error = try #require(BlueZError(dbusName: "org.bluez.Error." + name, message: "m"))
        if case .other = error.kind { Issue.record("\(name) fell through to .other") }
        #expect(error.dbusName == "org.bluez.Error." + name)
        #expect(error.message == "m")
        #expect(!error.explanation.isEmpty)
    }

    @Test("a name outside org.bluez.Error is not a BlueZ error; an unknown one keeps its name")
    func foreignAndUnknown() throws {
        #expect(BlueZError(dbusName: "org.freedesktop.DBus.Error.NoReply", message: "") == nil)
        let future = try #require(BlueZError(dbusName: "org.bluez.Error.Frobnicated", message: "x"))
        #expect(future.kind == .other("Frobnicated"))
        #expect(future.dbusName == "org.bluez.Error.Frobnicated")
    }

    @Test("page timeout tells the user the speaker is off or out of range")
    func pageTimeout() throws {
        let error = try #require(BlueZError(dbusName: "org.bluez.Error.Failed", message: "br-connection-page-timeout"))
        #expect(error.connectionFailure == ConnectionFailure(transport: .bredr, reason: .pageTimeout))
        #expect(error.explanation == "the speaker is off or out of range")
        #expect(error.description.contains("br-connection-page-timeout"))
        #expect(error.connectionFailure?.isWorthRetrying == true)
    }

    @Test("profile unavailable points at the missing audio stack and is not worth retrying")
    func profileUnavailable() throws {
        let error = try #require(BlueZError(dbusName: "org.bluez.Error.Failed", message: "br-connection-profile-unavailable"))
        #expect(error.explanation == "no audio endpoint registered: is BlueALSA or PipeWire running?")
        #expect(error.connectionFailure?.isWorthRetrying == false)
    }

    @Test("every br- and le- reason string bluetoothd sends is recognised",
          arguments: [
            "br-connection-already-connected", "br-connection-page-timeout", "br-connection-sdp-search",
            "br-connection-create-socket", "br-connection-invalid-argument", "br-connection-adapter-not-powered",
            "br-connection-not-supported", "br-connection-bad-socket", "br-connection-memory-allocation",
            "br-connection-busy", "br-connection-concurrent-connection-limit", "br-connection-timeout",
            "br-connection-refused", "br-connection-aborted-by-remote", "br-connection-aborted-by-local",
            "br-connection-lmp-protocol-error", "br-connection-canceled", "br-connection-key-missing",
            "br-connection-unknown", "br-connection-profile-unavailable",
            "le-connection-invalid-arguments", "le-connection-adapter-not-powered", "le-connection-not-supported",
            "le-connection-already-connected", "le-connection-bad-socket", "le-connection-memory-allocation",
            "le-connection-busy", "le-connection-refused", "le-connection-create-socket", "le-connection-timeout",
            "le-connection-concurrent-connection-limit", "le-connection-abort-by-remote",
            "le-connection-abort-by-local", "le-connection-link-layer-protocol-error",
            "le-connection-gatt-browsing", "le-connection-key-missing", "le-connection-unknown",
          ])
    func reasons(text: String) throws {
        let failure = try #require(ConnectionFailure(message: text))
        #expect(failure.description == text)
        #expect(!failure.explanation.isEmpty)
    }

    @Test("a message without a reason string has no connection failure")
    func noReason() {
        #expect(ConnectionFailure(message: "Operation already in progress") == nil)
        #expect(ConnectionFailure(message: "br-connection-made-up") == nil)
    }

    @Test("client errors read as one sentence saying what to do")
    func clientErrors() throws {
        let address = try BluetoothAddress("11:22:33:44:55:66")
        #expect("\(BlueZClientError.adapterBlocked(name: "hci0"))".contains("rfkill unblock"))
        #expect("\(BlueZClientError.unknownDevice(address))".contains("11:22:33:44:55:66"))
        #expect("\(BlueZClientError.bluetoothdNotRunning)".contains("bluetooth.service"))
        let wrapped = BlueZClientError.bluez(FakeBlueZClient.pageTimeout, operation: "Connect to 11:22:33:44:55:66")
        #expect("\(wrapped)" == "Connect to 11:22:33:44:55:66 failed: the speaker is off or out of range (org.bluez.Error.Failed: br-connection-page-timeout)")
    }

    @Test("Disconnected reasons from BlueZ become typed reasons")
    func disconnectReasons() {
        #expect(DisconnectReason(dbusName: "org.bluez.Reason.Timeout") == .timeout)
        #expect(DisconnectReason(dbusName: "org.bluez.Reason.Remote") == .remote)
        #expect(DisconnectReason(dbusName: "org.bluez.Reason.Local") == .local)
        #expect(DisconnectReason(dbusName: "org.bluez.Reason.Suspend") == .suspend)
        #expect(DisconnectReason(dbusName: "org.bluez.Reason.Authentication") == .authentication)
        #expect(DisconnectReason(dbusName: "org.bluez.Reason.Unknown") == .unknown)
        #expect(DisconnectReason(dbusName: "org.bluez.Reason.New") == .other("org.bluez.Reason.New"))
    }
}
