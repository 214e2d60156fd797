import SpeakerdAPI
/// How this speakerd process was started: by the D-Bus daemon for a request (bus activation),
/// or not (systemd at boot, a person at a shell).
///
/// dbus-daemon sets `DBUS_STARTER_ADDRESS` and `DBUS_STARTER_BUS_TYPE` in the environment of a
/// service it activates, so they are the reliable sign that a call is already waiting for
/// speakerd's name: start-up then runs the "launched by request" graph, and speakerd serves on
/// that bus unless `--bus` or the config file name another.
///
/// Activation through systemd (`SystemdService=` in the activation file) passes neither: such a
/// start cannot be told from a boot start by its environment. speakerd then finds out in its bus
/// step, from the calls it is handed once it owns its name, and switches the rest of start-up to
/// the "launched by request" graph (`SpeakerdDaemon.switchToLaunchedByRequestIfCalled`).
public struct BusActivation: Equatable, Sendable {
    /// The bus that activated us: its address when given, else its type.
    public let bus: BusSelection

    /// Reads the activation variables; nil when this process was not started by bus activation.
    /// A starter address that is not a D-Bus address is an error, not a silent fall-back.
    public init?(environment: [String: String]) throws(ConfigurationError) {
        let address = environment["DBUS_STARTER_ADDRESS"].flatMap { $0.isEmpty ? nil : $0 }
        switch (address, environment["DBUS_STARTER_BUS_TYPE"]) {
        case let (address?, _):
            guard case .address? = try? BusSelection(parsing: address) else {
                throw .invalidOverride(source: "DBUS_STARTER_ADDRESS", problem: "'\(address)' is not a D-Bus address")
            }
            bus = .address(address)
        case (nil, "system"): bus = .system
        case (nil, "session"): bus = .session
        default: return nil
        }
    }
}
