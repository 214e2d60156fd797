import DBus
/// The compatibility check (`BlueZSupport`) run against each bluetoothd the client meets: once
/// when it appears, and again when its first adapter does if it had none to look at.
extension DBusBlueZClient {
    /// Introspects the first adapter and records the verdict; a refused introspection leaves it
    /// undetermined (speakerd then goes on and lets the calls themselves fail if they must).
    func checkSupport() async {
        guard support == .undetermined, let path = await cache.adapterPaths.first else { return }
        guard let xml = await introspect(path) else { return }
        support = BlueZSupport.verdict(adapterIntrospection: xml)
        if case .tooOld(let found) = support { warnTooOld(found) }
    }

    /// `GetManagedObjects` is unknown at `/`: a pre-5 bluetoothd, named from its root object.
    func judgePreFive(_ error: DBusError) async {
        let found = BlueZSupport.describePreFive(rootIntrospection: await introspect(.root))
        logger.debug("GetManagedObjects at / failed: \(error)")
        support = .tooOld(found: found)
        warnTooOld(found)
    }

    private func warnTooOld(_ found: String) {
        logger.error("\(BlueZClientError.unsupportedBlueZ(found: found, needed: BlueZSupport.minimumVersion))")
    }

    private func introspect(_ path: DBusObjectPath) async -> String? {
        do {
            let reply = try await connection.call(
                destination: BlueZInterface.service, path: path, interface: "org.freedesktop.DBus.Introspectable",
                method: "Introspect", timeout: configuration.callTimeout)
            return try reply.decode(String.self, at: 0)
        } catch {
            logger.warning("could not introspect BlueZ's \(path): \(error); its version is not checked")
            return nil
        }
    }
}
