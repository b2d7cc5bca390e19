package loadtest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// procStat is what /proc says about one process at one moment.
type procStat struct {
	CPU     time.Duration // user and system time so far
	PeakRSS int64         // VmHWM, bytes
	RSS     int64         // VmRSS, bytes
}

// userHZ is the unit of utime and stime in /proc/<pid>/stat. The kernel
// fixes it at 100 for user space on every architecture Go supports,
// whatever its internal tick rate, so no sysconf call is needed.
const userHZ = 100

// readProc reads /proc/<pid>/stat and /proc/<pid>/status. ok is false where
// there is no /proc (anything but Linux) or the process is gone.
func readProc(pid int) (st procStat, ok bool) {
	if runtime.GOOS != "linux" {
		return st, false
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return st, false
	}
	cpu, err := parseStatCPU(data)
	if err != nil {
		return st, false
	}
	st.CPU = cpu
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return st, false
	}
	st.PeakRSS, st.RSS = parseStatusRSS(status)
	return st, true
}

// parseStatCPU reads utime and stime (fields 14 and 15). The command name,
// field 2, may hold spaces and parentheses, so fields are counted from
// the last ')'.
func parseStatCPU(data []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("no command name in /proc stat")
	}
	f := strings.Fields(string(data[i+1:]))
	// f[0] is field 3 (state), so field n is f[n-3].
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc stat")
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("unreadable utime or stime in /proc stat")
	}
	return time.Duration(utime+stime) * time.Second / userHZ, nil
}

// parseStatusRSS reads VmHWM and VmRSS, which /proc gives in kB.
func parseStatusRSS(data []byte) (peak, now int64) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "VmHWM":
			peak = n * 1024
		case "VmRSS":
			now = n * 1024
		}
	}
	return peak, now
}

// cpuModel is the processor's name from /proc/cpuinfo, or "" where there
// is none.
func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
