@testable import ComposerCLIKit
@testable import DBus
import Foundation
import TestSupport
import Testing

/// The real-machine probes `composer-cli doctor` runs, on files and addresses made per test.
@Suite("Local probes: file headers and D-Bus address escapes")
struct LocalProbesTests {
    @Test("a file header is its first 12 bytes, a shorter file gives what it has, no file gives nil")
    func fileHeader() throws {
        let directory = TemporaryDirectory()
        let sf2 = Array("RIFF\u{4}\0\0\0sfbkLIST and more".utf8)
        try Data(sf2).write(to: URL(fileURLWithPath: directory.path + "/a.sf2"))
        try Data("MThd".utf8).write(to: URL(fileURLWithPath: directory.path + "/short.mid"))
        #expect(LocalProbes.fileHeader(directory.path + "/a.sf2") == Array(sf2.prefix(12)))
        #expect(LocalProbes.fileHeader(directory.path + "/short.mid") == Array("MThd".utf8))
        #expect(LocalProbes.fileHeader(directory.path + "/none.sf2") == nil)
        #expect(LocalProbes.fileHeader(directory.path) == [])  // a directory opens but reads nothing
    }

    @Test("%XX escapes in a D-Bus address value are decoded; a malformed escape or bad UTF-8 is nil")
    func unescape() {
        #expect(LocalProbes.unescape("/run/dbus/system_bus_socket") == "/run/dbus/system_bus_socket")
        #expect(LocalProbes.unescape("/tmp/with%20space%2c%2Ccomma") == "/tmp/with space,,comma")
        #expect(LocalProbes.unescape("%C3%A9t%c3%a9") == "été")
        #expect(LocalProbes.unescape("/tmp/50%") == nil)
        #expect(LocalProbes.unescape("/tmp/%4") == nil)
        #expect(LocalProbes.unescape("/tmp/%zz") == nil)
        #expect(LocalProbes.unescape("/tmp/%+f") == nil)
        #expect(LocalProbes.unescape("%ff%fe") == nil)
    }
}
