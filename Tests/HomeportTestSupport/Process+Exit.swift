import Foundation

#if canImport(Glibc)
    import Glibc
#endif

extension Process {
    /// Waits for the program to end and returns its status: its exit code, or the signal that
    /// ended it, as `terminationStatus` gives them.
    ///
    /// On Linux, `waitUntilExit()` learns of the end through a socket the program inherits, which
    /// is not close-on-exec: a program another thread starts at that moment can inherit it too,
    /// and then the end goes unnoticed until that program ends as well (for a server, after the
    /// test that waits). This asks the kernel instead, with `waitid`'s `WNOWAIT`, which leaves the
    /// process to Foundation to reap.
    ///
    /// Call it for every program started, even one known to have ended: it also lets Foundation
    /// release the `Process` and its pipes (see `releaseFoundationState()`).
    @discardableResult
    public func waitForExit() -> Int32 {
        // Never started: nothing to wait for (Foundation traps on the status of such a process).
        guard processIdentifier != 0 else { return -1 }
        var status: Int32
        while true {
            if !isRunning {
                status = terminationStatus
                break
            }
            if case .ended(let ended) = kernelState, let ended {
                status = ended
                break
            }
            usleep(5_000)
        }
        releaseFoundationState()
        return status
    }

    /// Sends `signal` unless the program has ended (never to a number the system may have given
    /// another process since), then waits for it with ``waitForExit()``, which also lets
    /// Foundation release it: how every stop ends, whether the program had ended or not. SIGKILL
    /// by default: a program started from a test thread inherits its blocked SIGTERM.
    @discardableResult
    public func stop(signal: Int32 = SIGKILL) -> Int32 {
        if !hasEnded { kill(processIdentifier, signal) }
        return waitForExit()
    }

    /// Foundation holds a started `Process`, and so its pipes and files, until `waitUntilExit()`
    /// has seen it end (its run-loop source and the process refer to each other until then):
    /// without that call every program leaks its descriptors, hundreds in a test run. Once
    /// Foundation has noticed the end, up to 2 seconds after the kernel (never, while a program
    /// that inherited its socket runs), the call returns at once.
    private func releaseFoundationState() {
        let deadline = ContinuousClock.now + .seconds(2)
        while isRunning && ContinuousClock.now < deadline { usleep(5_000) }
        if !isRunning { waitUntilExit() }
    }

    /// Whether the program has ended, even when Foundation has not noticed yet (see
    /// `waitForExit()`).
    public var hasEnded: Bool {
        if !isRunning { return true }
        if case .ended = kernelState { return true }
        return false
    }

    private enum KernelState {
        case running
        /// Ended; the status is nil once Foundation has reaped it (its own status then follows).
        case ended(Int32?)
    }

    private var kernelState: KernelState {
        #if os(Linux)
            let pid = processIdentifier
            var info = siginfo_t()
            if waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 {
                return info._sifields._sigchld.si_pid == pid ? .ended(info._sifields._sigchld.si_status) : .running
            }
            return errno == ECHILD ? .ended(nil) : .running
        #else
            return isRunning ? .running : .ended(nil)
        #endif
    }
}
