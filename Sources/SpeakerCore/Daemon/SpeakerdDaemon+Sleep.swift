import DBus
import Logind
/// logind's suspend and resume: the reconnect policy holds still while the machine sleeps and
/// reconnects shortly after it wakes (`PrepareForSleep(false)`).
extension SpeakerdDaemon {
    static let logindName = "org.freedesktop.login1"

    /// Follows `PrepareForSleep` from logind on the daemon's bus; where there is no logind
    /// (containers, the test bus) the subscription simply never delivers anything.
    func watchSleep(on connection: DBusConnection) async {
        guard sleepTask == nil else { return }
        let rule = DBusMatchRule(sender: Self.logindName, path: "/org/freedesktop/login1",
                                 interface: "org.freedesktop.login1.Manager", member: "PrepareForSleep")
        let signals: DBusSignalStream
        do { signals = try await connection.signals(matching: rule) } catch {
            logger.notice("not following suspend and resume: \(error.description)")
            return
        }
        sleepTask = Task { [weak self] in
            for await signal in signals {
                guard case .bool(let starting)? = signal.arguments.first else { continue }
                await self?.systemSleep(starting: starting)
            }
        }
    }
}
