@testable import BlueZ
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("Bluetooth addresses")
struct BluetoothAddressTests {
    @Test("an address typed in lower case is the same speaker as in upper case")
    func caseInsensitive() throws {
        let lower = try BluetoothAddress("aa:bb:cc:dd:ee:0f")
        let upper = try BluetoothAddress("AA:BB:CC:DD:EE:0F")
        #expect(lower == upper)
        #expect(lower.description == "AA:BB:CC:DD:EE:0F")
        #expect(lower.bytes == [0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0x0F])
    }

    @Test("the object-path element matches the one BlueZ builds")
    func pathElement() throws {
        #expect(try BluetoothAddress("11:22:33:44:55:66").devicePathElement == "dev_11_22_33_44_55_66")
    }

    @Test("malformed input gets a one-line error that says what is wrong",
          arguments: [
            ("11:22:33:44:55", "it has 14 characters, an address has 17"),
            ("11-22-33-44-55-66", "character 3 should be ':'"),
            ("11:22:33:44:55:6G", "character 17 is not a hexadecimal digit"),
            (" 11:22:33:44:55:6", "character 1 is not a hexadecimal digit"),
            ("00:00:00:00:00:00", "means \"any device\""),
            ("ff:ff:ff:ff:ff:ff", "broadcast address"),
            ("", "it has 0 characters"),
          ])
    func malformed(input: String, expected: String) {
        #expect {
            try BluetoothAddress(input)
        } throws: { error in
            let message = "\(error)"
            return message.contains(expected) && message.contains("expected the form 11:22:33:44:55:66")
                && !message.contains("\n")
        }
    }

    @Test("addresses order and hash by their bytes, so a set of known speakers has no duplicates")
    func orderingAndHashing() throws {
        let address = try BluetoothAddress("01:02:03:04:05:06")
        #expect(address < (try BluetoothAddress("01:02:03:04:05:07")))
        #expect(Set([address, try BluetoothAddress("01:02:03:04:05:06")]).count == 1)
    }
}

@Suite("Kernel Bluetooth diagnostics")
struct KernelBluetoothTests {
    @Test("on this machine the kernel has no Bluetooth, and that is an answer, not a crash")
    func noBluetoothHere() {
        let listing = KernelBluetooth.listControllers()
        #expect(listing == .noBluetoothInKernel)
        #expect("\(listing)".contains("no Bluetooth in this kernel"))
    }

    @Test("socket errors other than a missing address family are reported with their cause")
    func otherErrors() {
        #expect(KernelBluetooth.classify(socketErrno: EAFNOSUPPORT) == .noBluetoothInKernel)
        let denied = KernelBluetooth.classify(socketErrno: EACCES)
        #expect(denied == .unavailable(operation: "socket(AF_BLUETOOTH)", errno: EACCES))
        #expect("\(denied)".contains("Permission denied"))
    }

    @Test("the HCIGETDEVLIST request number matches the kernel's _IOR('H', 210, int)")
    func ioctlNumber() {
        #expect(KernelBluetooth.getDeviceListRequest == 0x8004_48D2)
    }

    @Test("an empty controller list tells the user to plug an adapter in")
    func emptyList() {
        #expect("\(KernelBluetoothListing.controllers([]))".contains("no controller"))
    }
}
