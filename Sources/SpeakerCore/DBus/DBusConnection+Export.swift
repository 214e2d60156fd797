/// Exporting objects, owning bus names.
extension DBusConnection {
    /// Serves `object` at `path` until `unexport(at:)` or the connection closes; announces it
    /// with InterfacesAdded on every object manager above it.
    public func export(_ object: DBusObject, at path: DBusObjectPath) throws(DBusError) {
        try exports.add(object, at: path)
        if !exports.watchesCallers.exchange(true, ordering: .acquiringAndReleasing) { DBusCallerWatch.start(on: loop) }
        object.added(to: self, at: path)
        for manager in exports.managers(containing: path) {
            loop.send(try DBusObjectManagerSupport.interfacesAdded(manager: manager, path: path, object: object))
        }
    }

    /// Stops serving the object at `path` (InterfacesRemoved is emitted); returns it, if any.
    @discardableResult
    public func unexport(at path: DBusObjectPath) -> DBusObject? {
        guard let object = exports.remove(at: path) else { return nil }
        object.removed(from: self, at: path)
        for manager in exports.managers(containing: path) {
            if let message = try? DBusObjectManagerSupport.interfacesRemoved(manager: manager, path: path, object: object) {
                loop.send(message)
            }
        }
        return object
    }

    /// Answers `org.freedesktop.DBus.ObjectManager` at `path` for every object exported below it.
    public func exportObjectManager(at path: DBusObjectPath) {
        exports.addManager(at: path)
    }

    /// Emits PropertiesChanged for `interface` at `path`.
    public func emitPropertiesChanged(
        path: DBusObjectPath, interface: String, changed: [String: DBusValue], invalidated: [String] = []
    ) {
        guard let message = try? DBusPropertiesHandler.changedSignal(
            path: path, interface: interface, changed: changed, invalidated: invalidated) else { return }
        loop.send(message)
    }

    /// Takes ownership of a well-known name, never queueing behind another owner.
    /// - Throws: `DBusError.nameTaken` when someone else owns it; `.remote` when the bus policy forbids it.
    public func requestName(_ name: String) async throws(DBusError) {
        try DBusValidation.busName(name)
        let doNotQueue: UInt32 = 0x4
        let reply = try await callBus("RequestName", [.string(name), .uint32(doNotQueue)])
        switch try reply.decode(UInt32.self, at: 0) {
        case 1, 4: return  // primary owner now, or already
        default: throw .nameTaken(name)
        }
    }

    /// Gives up a well-known name; true if we owned it.
    @discardableResult
    public func releaseName(_ name: String) async throws(DBusError) -> Bool {
        try DBusValidation.busName(name)
        return try await callBus("ReleaseName", [.string(name)]).decode(UInt32.self, at: 0) == 1
    }
}
