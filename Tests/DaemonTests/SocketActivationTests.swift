import CBlueZ
import Glibc
import Testing
@testable import SpeakerCore

/// speakerd links libdbus statically and answers its two calls into libsystemd itself
/// (`SocketActivation`); these pin those answers to sd_listen_fds(3) and sd_is_socket(3).
@Suite("the static libdbus and its socket activation functions")
struct SocketActivationTests {
    @Test("speakerd and composer-cli load no shared libdbus, libbluetooth or libsystemd", arguments: ["speakerd", "composer-cli"])
    func noSharedDBus(program: String) async throws {
        // The dynamic loader lists what it would load, and stops (the way ldd works).
        let run = try await ExecutableRun.run(program, [], environment: ["LD_TRACE_LOADED_OBJECTS": "1"])
        #expect(run.status == 0)
        #expect(run.standardOutput.contains("libc.so.6"), "the loader listed the libraries")
        for library in ["libdbus-1", "libbluetooth", "libsystemd"] {
            #expect(!run.standardOutput.contains(library), "\(program) loads \(library)")
        }
    }

    @Test("descriptors are ours only when LISTEN_PID names this process")
    func passedDescriptorCount() {
        let me: pid_t = 4242
        #expect(SocketActivation.passedDescriptorCount(listenPID: nil, listenFDs: "2", processID: me) == 0)
        #expect(SocketActivation.passedDescriptorCount(listenPID: "4243", listenFDs: "2", processID: me) == 0)
        #expect(SocketActivation.passedDescriptorCount(listenPID: "4242", listenFDs: "2", processID: me) == 2)
        #expect(SocketActivation.passedDescriptorCount(listenPID: "4242", listenFDs: "0", processID: me) == 0)
        #expect(SocketActivation.passedDescriptorCount(listenPID: "4242", listenFDs: nil, processID: me) == 0)
    }

    @Test("a malformed LISTEN_PID or LISTEN_FDS is -EINVAL, not a guess")
    func malformedEnvironment() {
        let me: pid_t = 4242
        for pid in ["", "0", "-1", "42x", "99999999999"] {
            #expect(SocketActivation.passedDescriptorCount(listenPID: pid, listenFDs: "1", processID: me) == -EINVAL)
        }
        for count in ["", "-1", "two", "2147483647"] {
            #expect(SocketActivation.passedDescriptorCount(listenPID: "4242", listenFDs: count, processID: me) == -EINVAL)
        }
    }

    @Test("passed descriptors are marked close-on-exec; one that is not open is -EBADF")
    func closeOnExec() throws {
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)  // plain pipe(): no close-on-exec yet
        defer { ends.forEach { close($0) } }
        #expect(fcntl(ends[0], F_GETFD) & FD_CLOEXEC == 0)
        #expect(SocketActivation.markCloseOnExec(from: ends[0], count: 0) == 0)
        #expect(fcntl(ends[0], F_GETFD) & FD_CLOEXEC == 0)
        for end in ends {
            #expect(SocketActivation.markCloseOnExec(from: end, count: 1) == 0)
            #expect(fcntl(end, F_GETFD) & FD_CLOEXEC != 0)
        }
        #expect(SocketActivation.markCloseOnExec(from: Self.notOpen, count: 1) == -EBADF)
    }

    @Test("a listening unix stream socket is recognised, with each filter")
    func listeningSocket() throws {
        let directory = TemporaryDirectory()
        let fd = try Self.unixStreamSocket(listeningAt: directory.path + "/s")
        defer { close(fd) }
        let stream = Int32(SOCK_STREAM.rawValue), datagram = Int32(SOCK_DGRAM.rawValue)
        #expect(systemdIsSocket(fd, AF_UNSPEC, stream, 1) == 1)  // what libdbus asks
        #expect(systemdIsSocket(fd, AF_UNIX, 0, -1) == 1)
        #expect(systemdIsSocket(fd, AF_INET, stream, 1) == 0)
        #expect(systemdIsSocket(fd, AF_UNSPEC, datagram, 1) == 0)
        #expect(systemdIsSocket(fd, AF_UNSPEC, stream, 0) == 0)
    }

    @Test("a socket that does not listen, a pipe and bad descriptors are told apart")
    func notListeningSockets() throws {
        let stream = Int32(SOCK_STREAM.rawValue)
        let fd = socket(AF_UNIX, stream | Int32(SOCK_CLOEXEC.rawValue), 0)
        try #require(fd >= 0)
        defer { close(fd) }
        #expect(systemdIsSocket(fd, AF_UNSPEC, stream, 1) == 0)
        #expect(systemdIsSocket(fd, AF_UNSPEC, stream, 0) == 1)

        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        defer { ends.forEach { close($0) } }
        #expect(systemdIsSocket(ends[0], AF_UNSPEC, 0, -1) == 0)

        #expect(systemdIsSocket(-1, AF_UNSPEC, 0, -1) == -EBADF)
        #expect(systemdIsSocket(Self.notOpen, AF_UNSPEC, 0, -1) == -EBADF)
        #expect(systemdIsSocket(fd, -1, 0, -1) == -EINVAL)
    }

    @Test("libdbus's own systemd: server address reaches these functions and reports no socket")
    func libdbusCallsThrough() {
        // The test process has no LISTEN_PID, so the answer is "none passed" and libdbus says so.
        var error = DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        let server = dbus_server_listen("systemd:", &error)
        #expect(server == nil)
        #expect(String(cString: error.name) == "org.freedesktop.DBus.Error.BadAddress")
        #expect(String(cString: error.message) == "No socket received.")
        if let server { dbus_server_disconnect(server); dbus_server_unref(server) }
    }

    /// A descriptor number no process can have open (the kernel caps them far lower), unlike a
    /// just-closed one, which a test running in parallel may be given at once.
    private static let notOpen = Int32.max - 1

    private static func unixStreamSocket(listeningAt path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        try #require(fd >= 0)
        try #require(bindUnixSocket(fd, to: path) == 0 && listen(fd, 1) == 0)
        return fd
    }
}
