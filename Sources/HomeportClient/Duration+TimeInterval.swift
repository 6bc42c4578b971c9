import Foundation

extension Duration {
    /// The duration in seconds, as Foundation's dates and timeouts count them.
    var timeInterval: TimeInterval {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
