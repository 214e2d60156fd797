import Synchronization

/// The objects one connection exports, and the dispatch of incoming method calls to them.
///
/// Runs inside the I/O thread's message filter: lookups are quick and under a mutex, and
/// every method handler runs in its own task, so a slow handler never stalls the connection.
final class DBusExportRegistry: Sendable {
    struct State {
        var objects: [DBusObjectPath: DBusObject] = [:]
        var managers: Set<DBusObjectPath> = []
    }

    let state = Mutex(State())
    /// Method handlers still running, by caller: admission and cancellation.
    let pending = DBusPendingCalls()
    /// Whether the NameOwnerChanged match that tells us about callers leaving is on the bus.
    let watchesCallers = Atomic<Bool>(false)

    func add(_ object: DBusObject, at path: DBusObjectPath) throws(DBusError) {
        try state.withLock { state throws(DBusError) in
            guard state.objects[path] == nil else { throw .pathInUse(path) }
            state.objects[path] = object
        }
    }

    func remove(at path: DBusObjectPath) -> DBusObject? {
        state.withLock { $0.objects.removeValue(forKey: path) }
    }

    func addManager(at path: DBusObjectPath) {
        _ = state.withLock { $0.managers.insert(path) }
    }

    /// Object managers whose subtree contains `path` (strictly below the manager).
    func managers(containing path: DBusObjectPath) -> [DBusObjectPath] {
        state.withLock { $0.managers.filter { $0 != path && path.isDescendant(ofOrEqualTo: $0) } }
    }

    /// Objects strictly below `manager`, for GetManagedObjects.
    func objects(managedBy manager: DBusObjectPath) -> [(DBusObjectPath, DBusObject)] {
        state.withLock { state in
            state.objects.filter { $0.key != manager && $0.key.isDescendant(ofOrEqualTo: manager) }.map { ($0.key, $0.value) }
        }
    }

    /// I/O thread: true if the call is ours (a reply will follow), false to let libdbus answer
    /// "unknown method/object".
    func handle(_ message: DBusMessage, loop: DBusEventLoop) -> Bool {
        guard let path = message.path, let member = message.member else { return false }
        let interface = message.interface
        let (object, isManager, children) = state.withLock { state in
            (state.objects[path], state.managers.contains(path), Self.children(of: path, in: state))
        }
        let call = DBusIncomingCall(message: message, loop: loop, registry: self)
        switch interface {
        case "org.freedesktop.DBus.Introspectable" where member == "Introspect":
            guard object != nil || isManager || !children.isEmpty else { return false }
            call.reply([.string(DBusIntrospection.xml(object: object, isManager: isManager, children: children))])
            return true
        case "org.freedesktop.DBus.Properties":
            guard let object else { return false }
            DBusPropertiesHandler.handle(call, member: member, object: object, path: path)
            return true
        case "org.freedesktop.DBus.ObjectManager" where isManager:
            guard member == "GetManagedObjects" else {
                call.replyError(DBusError.Name.unknownMethod, "ObjectManager has no method \(member)")
                return true
            }
            call.reply([DBusObjectManagerSupport.managedObjects(objects(managedBy: path))])
            return true
        default:
            guard let object else { return false }
            object.noteMethodCall()
            dispatchMethod(call, object: object, interface: interface, member: member, path: path)
            return true
        }
    }

    private func dispatchMethod(_ call: DBusIncomingCall, object: DBusObject, interface: String?, member: String, path: DBusObjectPath) {
        let candidates = interface.map { name in object.interface(named: name).map { [$0] } ?? [] } ?? object.interfaces
        if let interface, candidates.isEmpty {
            return call.replyError(DBusError.Name.unknownInterface, "\(path) has no interface \(interface)")
        }
        guard let (owner, method) = candidates.lazy.compactMap({ i in i.methods.first { $0.name == member }.map { (i, $0) } }).first else {
            return call.replyError(DBusError.Name.unknownMethod, "\(interface ?? path.rawValue) has no method \(member)")
        }
        let signature = call.message.signature
        guard signature == method.inputSignature else {
            return call.replyError(DBusError.Name.invalidArgs,
                                   "\(owner.name).\(member) takes '\(method.inputSignature)', got '\(signature)'")
        }
        let sender = call.message.sender ?? ""
        // Admission comes before the arguments are decoded: a refused call's descriptors are
        // released with its message as soon as the error reply is queued.
        let id: UInt64
        switch pending.admit(sender: sender, bounded: method.bounded, limits: object.callLimits) {
        case .success(let admitted): id = admitted
        case .failure(let refusal):
            let name = object.callLimits?.busyErrorName ?? DBusError.Name.limitsExceeded
            return call.replyError(name, refusal.sentence(member: member))
        }
        let expected = method.outputSignature
        let answer = DBusCallAnswer(expectedSignature: expected) { call.reply($0) }
        let context = DBusMethodCallContext(
            sender: sender, path: path, interface: owner.name, member: member, arguments: call.message.arguments, answer: answer)
        let handler = method.handler
        let pending = self.pending
        let task = Task {
            defer { pending.finish(id, sender: sender) }
            do {
                let results = try await handler(context)
                guard answer.claim() else { return }  // answered early: the outcome went another way
                let actual = results.signature.rawValue
                guard actual == expected else {
                    return call.replyError(DBusError.Name.failed, "\(owner.name).\(member) produced '\(actual)' instead of its declared '\(expected)'")
                }
                call.reply(results)
            } catch {
                guard answer.claim() else { return }
                call.replyError(for: error)
            }
        }
        pending.attach(task, to: id, sender: sender)
    }

    private static func children(of path: DBusObjectPath, in state: State) -> [String] {
        let prefix = path.rawValue == "/" ? "/" : path.rawValue + "/"
        var names = Set<String>()
        for candidate in Array(state.objects.keys) + Array(state.managers) where candidate.rawValue.hasPrefix(prefix) {
            if let next = candidate.rawValue.dropFirst(prefix.count).split(separator: "/").first { names.insert(String(next)) }
        }
        return names.sorted()
    }
}

/// One incoming method call waiting for its answer; replies are sent from the I/O thread.
struct DBusIncomingCall: Sendable {
    let message: DBusMessage
    let loop: DBusEventLoop
    let registry: DBusExportRegistry

    func reply(_ values: [DBusValue]) {
        guard message.expectsReply else { return }
        guard let reply = message.makeReturn() else { return }
        do {
            try reply.append(values)
        } catch {
            return replyError(DBusError.Name.failed, "the reply could not be encoded: \(error)")
        }
        loop.send(reply)
    }

    func replyError(_ name: String, _ text: String) {
        guard message.expectsReply, let reply = message.makeError(name: name, message: text) else { return }
        loop.send(reply)
    }

    func replyError(for error: Error) {
        switch error {
        case let error as DBusErrorConvertible: replyError(error.dbusErrorName, error.dbusErrorMessage)
        case let error as DBusError:
            let (name, text) = error.replyNameAndMessage
            replyError(name, text)
        default: replyError(DBusError.Name.failed, String(describing: error))
        }
    }
}
