@testable import BlueZ
@testable import Daemon
import TestSupport
import Testing
@testable import Configuration

/// How speakerd tells a start by D-Bus activation from any other, and which bus it then serves on.
@Suite("Bus activation and the choice of bus")
struct BusActivationTests {
    static let starter = "unix:path=/run/user/1000/bus,guid=0123456789abcdef"

    func resolve(_ options: DaemonOptions = DaemonOptions(configPath: "/c.conf"), file: String = "",
                 environment: [String: String]) throws -> DaemonConfiguration {
        try options.resolve(environment: environment) { (_: String) throws(FileReadError) -> String? in file }
    }

    @Test("no starter variables: not launched by a request, and the system bus")
    func notActivated() throws {
        #expect(try BusActivation(environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/x"]) == nil)
        let configuration = try resolve(environment: [:])
        #expect(!configuration.launchedByRequest)
        #expect(configuration.bus == .system)
    }

    @Test("activated: the launched-by-request start-up, served on the starter address")
    func activatedUsesStarterAddress() throws {
        let configuration = try resolve(environment: ["DBUS_STARTER_ADDRESS": Self.starter, "DBUS_STARTER_BUS_TYPE": "system"])
        #expect(configuration.launchedByRequest)
        #expect(configuration.bus == .address(Self.starter))
    }

    @Test("systemd's INVOCATION_ID marks a start by systemd, which may be for a request; nothing else changes")
    func startedBySystemd() throws {
        let bySystemd = try resolve(environment: ["INVOCATION_ID": "5f0e3c1d2b4a49c8a1e7d6f5c4b3a291"])
        #expect(bySystemd.startedBySystemd)
        #expect(!bySystemd.launchedByRequest, "only the calls waiting for the name can tell")
        #expect(bySystemd.bus == .system)
        #expect(!(try resolve(environment: [:])).startedBySystemd)
        #expect(!(try resolve(environment: ["INVOCATION_ID": ""])).startedBySystemd)
    }

    @Test("a starter bus type without an address names that bus")
    func starterTypeOnly() throws {
        #expect(try BusActivation(environment: ["DBUS_STARTER_BUS_TYPE": "session"])?.bus == .session)
        #expect(try BusActivation(environment: ["DBUS_STARTER_BUS_TYPE": "system"])?.bus == .system)
        #expect(try BusActivation(environment: ["DBUS_STARTER_BUS_TYPE": "nonsense"]) == nil)
    }

    @Test("precedence: --bus, then the config file's bus, then the starter address, then the system bus")
    func busPrecedence() throws {
        let activated = ["DBUS_STARTER_ADDRESS": Self.starter]
        let fromFile = try resolve(file: "bus = session\n", environment: activated)
        #expect(fromFile.bus == .session)
        #expect(fromFile.launchedByRequest, "a request is waiting whichever bus serves it")
        let fromFlag = try resolve(DaemonOptions(configPath: "/c.conf", bus: "unix:path=/tmp/flag"),
                                   file: "bus = session\n", environment: activated)
        #expect(fromFlag.bus == .address("unix:path=/tmp/flag"))
        #expect(try resolve(environment: activated).bus == .address(Self.starter))
    }

    @Test("a starter address that is not a D-Bus address is a one-line configuration error")
    func malformedStarterAddress() {
        let error = #expect(throws: ConfigurationError.self) {
            _ = try resolve(environment: ["DBUS_STARTER_ADDRESS": "/run/bus"])
        }
        #expect(error?.description == "DBUS_STARTER_ADDRESS: '/run/bus' is not a D-Bus address")
    }

    @Test("an activated daemon's start-up runs the launched-by-request graph", arguments: [false, true])
    func activatedDaemonRunsLaunchedByRequest(hasKnownSpeaker: Bool) async throws {
        let state = TemporaryDirectory()
        if hasKnownSpeaker {
            state.write("""
                {"version":1,"speakers":[{"address":"11:22:33:AA:BB:CC","name":"JBL Flip 5",\
                "firstConnected":"2027-01-15T08:00:00Z","lastConnected":"2027-01-15T08:00:00Z"}]}
                """, to: "state.json")
        }
        var configuration = try resolve(environment: ["DBUS_STARTER_ADDRESS": Self.starter])
        configuration.stateDirectory = state.path
        let daemon = SpeakerdDaemon(
            configuration: configuration,
            dependencies: DaemonDependencies(connectBus: nil, makeBlueZ: { _ in throw BlueZClientError.bluetoothdNotRunning }),
            notifier: nil, logger: .init(label: "test.speakerd"))
        await daemon.start()
        let timeline = try #require(await daemon.startupTimeline)
        #expect(timeline.scenario == StartupScenarios.Name.launchedByRequest)
        #expect(timeline.operations.contains { $0.name == (hasKnownSpeaker ? "connectKnownSpeaker" : "scanAndPick") })
        await daemon.shutdown()
    }
}
