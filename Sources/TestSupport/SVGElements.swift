import Foundation
import FoundationXML
import Testing

/// What XMLParser saw of an SVG (composer-cli's start-up chart): each element's name and
/// attributes, and the text of each `<title>`.
public final class SVGElements: NSObject, XMLParserDelegate {
    public private(set) var elements: [(name: String, attributes: [String: String])] = []
    public private(set) var titles: [String] = []
    private var inTitle = false

    /// Parses `svg`; a document that is not well-formed XML fails the test that asked.
    public static func parse(_ svg: String, sourceLocation: SourceLocation = #_sourceLocation) -> SVGElements {
        let parser = XMLParser(data: Data(svg.utf8))
        let elements = SVGElements()
        parser.delegate = elements
        #expect(parser.parse(), "the SVG is not well-formed XML: \(String(describing: parser.parserError))", sourceLocation: sourceLocation)
        return elements
    }

    public func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                       attributes: [String: String] = [:]) {
        elements.append((name, attributes))
        inTitle = name == "title"
        if inTitle { titles.append("") }
    }

    public func parser(_ parser: XMLParser, foundCharacters string: String) {
        if inTitle { titles[titles.count - 1] += string }
    }

    public func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        if name == "title" { inTitle = false }
    }
}
