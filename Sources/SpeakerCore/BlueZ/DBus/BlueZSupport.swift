import DBus
/// Whether the bluetoothd on the bus is one speakerd can work with.
///
/// BlueZ publishes no version number on D-Bus, so the check reads what the bus shows instead:
/// - BlueZ 4 (and any other pre-5 daemon) has no `org.freedesktop.DBus.ObjectManager` at `/`, so
///   `GetManagedObjects` fails; BlueZ 4 is recognised by its `org.bluez.Manager` at `/`.
/// - BlueZ 5 before 5.30 has `org.bluez.Adapter1` without `SetDiscoveryFilter` (documented in
///   doc/adapter-api.txt in March 2015, first released in 5.30; experimental, hence absent from the
///   bus unless bluetoothd runs with `-E`, until it became stable). Scan-and-pick calls it before
///   every discovery, so it is speakerd's floor.
/// Both are read from what the daemon really exports (introspection), never from a package
/// version, so a distribution's backports and a bluetoothd started without `-E` are judged right.
enum BlueZSupport {
    /// The oldest BlueZ speakerd works with, as people name it.
    static let minimumVersion = "5.30"

    /// What the check concluded about the current bluetoothd.
    enum Verdict: Equatable, Sendable {
        /// Not known yet: BlueZ 5 with no adapter to introspect, or introspection refused.
        case undetermined
        case supported
        /// Too old; `found` names what was seen, e.g. "BlueZ 4 (org.bluez.Manager)".
        case tooOld(found: String)
    }

    /// The error names a daemon without an ObjectManager at `/` answers `GetManagedObjects` with.
    static func lacksObjectManager(_ error: DBusError) -> Bool {
        guard case .remote(let name, _) = error else { return false }
        return [
            "org.freedesktop.DBus.Error.UnknownMethod", "org.freedesktop.DBus.Error.UnknownInterface",
            "org.freedesktop.DBus.Error.UnknownObject",
        ].contains(name)
    }

    /// Names a pre-5 bluetoothd from the introspection of its root object (nil if unreadable).
    static func describePreFive(rootIntrospection xml: String?) -> String {
        if let xml, IntrospectionScan.methods(of: "org.bluez.Manager", in: xml) != nil {
            return "BlueZ 4 (org.bluez.Manager)"
        }
        return "a BlueZ without an ObjectManager at / (older than BlueZ 5)"
    }

    /// Judges a BlueZ 5 from one adapter object's introspection.
    static func verdict(adapterIntrospection xml: String) -> Verdict {
        guard let methods = IntrospectionScan.methods(of: BlueZInterface.adapter, in: xml) else { return .undetermined }
        if methods.contains("SetDiscoveryFilter") { return .supported }
        return .tooOld(found: "BlueZ 5 older than \(minimumVersion) (org.bluez.Adapter1 has no SetDiscoveryFilter)")
    }
}

/// Just enough of an introspection-XML reader to list an interface's methods: tags are scanned
/// in order, so no XML library is pulled into the daemon for one question.
enum IntrospectionScan {
    /// The method names of `interface`, or nil when the XML does not declare that interface.
    static func methods(of interface: String, in xml: String) -> Set<String>? {
        var inside = false
        var found = false
        var methods: Set<String> = []
        var rest = xml[...]
        while let open = rest.firstIndex(of: "<") {
            guard let close = rest[open...].firstIndex(of: ">") else { break }
            let tag = rest[rest.index(after: open)..<close]
            rest = rest[rest.index(after: close)...]
            if tag.hasPrefix("interface") {
                inside = attribute("name", of: tag) == interface
                found = found || inside
            } else if tag.hasPrefix("/interface") {
                inside = false
            } else if inside, tag.hasPrefix("method"), let name = attribute("name", of: tag) {
                methods.insert(name)
            }
        }
        return found ? methods : nil
    }

    /// The value of `name="…"` (or `name='…'`) in a tag's text.
    private static func attribute(_ name: String, of tag: Substring) -> String? {
        for quote in ["\"", "'"] {
            guard let start = tag.firstRange(of: " \(name)=\(quote)") ?? tag.firstRange(of: "\t\(name)=\(quote)")
                ?? tag.firstRange(of: "\n\(name)=\(quote)") else { continue }
            let value = tag[start.upperBound...]
            guard let end = value.firstIndex(of: Character(quote)) else { return nil }
            return String(value[..<end])
        }
        return nil
    }
}
