import DBus
import Foundation

/// The same round trips through speakerd's async D-Bus layer.
enum Ours {
    static func sequential(_ connection: DBusConnection, destination: String, calls: Int) async throws -> [Double] {
        var latencies: [Double] = []
        latencies.reserveCapacity(calls)
        for i in 0..<calls {
            let start = DispatchTime.now().uptimeNanoseconds
            let reply = try await connection.call(destination: destination, path: "/bench", interface: "com.speakerd.Bench",
                                                  method: "Echo", arguments: [DBusValue.uint32(UInt32(i))])
            guard reply == [DBusValue.uint32(UInt32(i))] else { throw BenchError("wrong reply") }
            latencies.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1000)
        }
        return latencies
    }

    /// `window` tasks, each calling in a loop, until `calls` calls are done.
    static func concurrent(_ connection: DBusConnection, destination: String, calls: Int, window: Int) async throws -> [Double] {
        try await withThrowingTaskGroup(of: [Double].self) { group in
            for worker in 0..<window {
                let share = calls / window + (worker < calls % window ? 1 : 0)
                group.addTask { try await sequential(connection, destination: destination, calls: share) }
            }
            var all: [Double] = []
            for try await part in group { all += part }
            return all
        }
    }
}
