/// `org.freedesktop.DBus.Introspectable` XML generated from an object's declared interfaces,
/// plus the standard interfaces we answer and the child nodes below the path.
enum DBusIntrospection {
    static let doctype = """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
        """

    static func xml(object: DBusObject?, isManager: Bool, children: [String]) -> String {
        var lines = [doctype, "<node>"]
        lines += standardInterface("org.freedesktop.DBus.Introspectable",
                                   "<method name=\"Introspect\"><arg name=\"xml_data\" type=\"s\" direction=\"out\"/></method>")
        lines += standardInterface("org.freedesktop.DBus.Peer", """
            <method name="Ping"/><method name="GetMachineId"><arg name="machine_uuid" type="s" direction="out"/></method>
            """)
        if let object {
            lines += standardInterface(DBusPropertiesHandler.interface, """
                <method name="Get"><arg name="interface_name" type="s" direction="in"/><arg name="property_name" type="s" direction="in"/><arg name="value" type="v" direction="out"/></method>
                <method name="GetAll"><arg name="interface_name" type="s" direction="in"/><arg name="properties" type="a{sv}" direction="out"/></method>
                <method name="Set"><arg name="interface_name" type="s" direction="in"/><arg name="property_name" type="s" direction="in"/><arg name="value" type="v" direction="in"/></method>
                <signal name="PropertiesChanged"><arg name="interface_name" type="s"/><arg name="changed_properties" type="a{sv}"/><arg name="invalidated_properties" type="as"/></signal>
                """)
            for interface in object.interfaces { lines += describe(interface) }
        }
        if isManager {
            lines += standardInterface(DBusObjectManagerSupport.interface, """
                <method name="GetManagedObjects"><arg name="objects" type="a{oa{sa{sv}}}" direction="out"/></method>
                <signal name="InterfacesAdded"><arg name="object" type="o"/><arg name="interfaces" type="a{sa{sv}}"/></signal>
                <signal name="InterfacesRemoved"><arg name="object" type="o"/><arg name="interfaces" type="as"/></signal>
                """)
        }
        for child in children { lines.append("  <node name=\"\(xmlEscaped(child))\"/>") }
        lines.append("</node>")
        return lines.joined(separator: "\n") + "\n"
    }

    private static func standardInterface(_ name: String, _ body: String) -> [String] {
        ["  <interface name=\"\(name)\">"] + body.split(separator: "\n").map { "    " + $0 } + ["  </interface>"]
    }

    private static func describe(_ interface: DBusInterface) -> [String] {
        var lines = ["  <interface name=\"\(xmlEscaped(interface.name))\">"]
        for method in interface.methods {
            lines.append("    <method name=\"\(xmlEscaped(method.name))\">")
            for arg in method.inputs { lines.append("      " + argument(arg, direction: "in")) }
            for arg in method.outputs { lines.append("      " + argument(arg, direction: "out")) }
            lines.append("    </method>")
        }
        for signal in interface.signals {
            lines.append("    <signal name=\"\(xmlEscaped(signal.name))\">")
            for arg in signal.arguments { lines.append("      " + argument(arg, direction: nil)) }
            lines.append("    </signal>")
        }
        for property in interface.properties {
            let emits = property.emitsChangedSignal ? "" :
                "<annotation name=\"org.freedesktop.DBus.Property.EmitsChangedSignal\" value=\"false\"/>"
            lines.append("    <property name=\"\(xmlEscaped(property.name))\" type=\"\(xmlEscaped(property.signature.rawValue))\" access=\"\(property.access.rawValue)\"\(emits.isEmpty ? "/>" : ">\(emits)</property>")")
        }
        lines.append("  </interface>")
        return lines
    }

    private static func argument(_ arg: DBusArgument, direction: String?) -> String {
        let name = arg.name.isEmpty ? "" : " name=\"\(xmlEscaped(arg.name))\""
        let dir = direction.map { " direction=\"\($0)\"" } ?? ""
        return "<arg\(name) type=\"\(xmlEscaped(arg.signature.rawValue))\"\(dir)/>"
    }

}
