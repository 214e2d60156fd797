import Testing
@testable import SpeakerCore

/// `firstRange(ofText:)`: the byte search the BlueZ introspection check and error matching use.
@Suite("Finding a fixed text in a string")
struct TextSearchTests {
    @Test("the first occurrence is found at the start, in the middle and at the end", arguments: [
        ("name=\"x\"", "name=", "name="),
        ("<method name=\"Connect\"/>", " name=\"", " name=\""),
        ("org.bluez.Error.Failed: rfkill", "rfkill", "rfkill"),
    ])
    func found(text: String, needle: String, expected: String) throws {
        let range = try #require(text[...].firstRange(ofText: needle))
        #expect(String(text[range]) == expected)
    }

    @Test("the first of several occurrences wins, and a false start does not hide the match")
    func firstOfSeveral() throws {
        let text = "aaab aab"
        let range = try #require(text[...].firstRange(ofText: "aab"))
        #expect(text.distance(from: text.startIndex, to: range.lowerBound) == 1)
    }

    @Test("absent text, a needle longer than the text and a match cut off by the end give nil")
    func absent() {
        #expect("Connect"[...].firstRange(ofText: "Disconnect") == nil)
        #expect("ab"[...].firstRange(ofText: "abc") == nil)
        #expect("xx name"[...].firstRange(ofText: "name=") == nil)
        #expect(!"No discovery in progress".containsText("No discovery started"))
    }

    @Test("an empty needle matches at the start")
    func emptyNeedle() {
        let text = "abc"[...]
        #expect(text.firstRange(ofText: "") == text.startIndex..<text.startIndex)
    }

    @Test("a slice is searched only within its bounds, and non-ASCII text around the match is kept whole")
    func sliceAndUnicode() throws {
        let text = "name=\"a\" <tag name=\"Gerät – Küche\"> name=\"b\""
        let open = try #require(text.firstIndex(of: "<"))
        let close = try #require(text.firstIndex(of: ">"))
        let tag = text[open...close]
        let start = try #require(tag.firstRange(ofText: " name=\""))
        #expect(start.lowerBound > open)
        let value = tag[start.upperBound...]
        let end = try #require(value.firstIndex(of: "\""))
        #expect(String(value[..<end]) == "Gerät – Küche")
    }
}
