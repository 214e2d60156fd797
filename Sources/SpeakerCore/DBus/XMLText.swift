/// `text` with XML's five special characters escaped, for element text and attribute values
/// alike: D-Bus introspection data and the start-up SVG both write XML.
public func xmlEscaped(_ text: String) -> String {
    var out = ""
    for character in text {
        switch character {
        case "&": out += "&amp;"
        case "<": out += "&lt;"
        case ">": out += "&gt;"
        case "\"": out += "&quot;"
        case "'": out += "&apos;"
        default: out.append(character)
        }
    }
    return out
}
