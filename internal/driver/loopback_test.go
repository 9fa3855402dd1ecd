package driver

import (
	"fmt"
	"io"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// The sizes of the net workload's messages: lengths a test can tell from
// other traffic on loopback.
const (
	tcpWriteSize    = 1000
	udpDatagramSize = 1234
)

// exchangeLoopback is the net workload: n writes of tcpWriteSize bytes on a
// TCP connection to 127.0.0.1, read by the accepting end, then n UDP
// datagrams of udpDatagramSize bytes to a socket on 127.0.0.1, each read
// before the next is sent. Before the first, the socket is read without
// waiting, which fails with EAGAIN.
func exchangeLoopback(n int) int {
	if err := exchangeTCP(n); err != nil {
		fmt.Fprintln(os.Stderr, "workload:", err)
		return 1
	}
	if err := exchangeUDP(n); err != nil {
		fmt.Fprintln(os.Stderr, "workload:", err)
		return 1
	}
	return 0
}

func exchangeTCP(n int) error {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	received := make(chan error, 1)
	go func() {
		conn, err := ln.Accept()
		if err == nil {
			_, err = io.CopyN(io.Discard, conn, int64(n*tcpWriteSize))
			conn.Close()
		}
		received <- err
	}()
	conn, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		return err
	}
	defer conn.Close()
	msg := make([]byte, tcpWriteSize)
	for range n {
		if _, err := conn.Write(msg); err != nil {
			return err
		}
	}
	return <-received
}

func exchangeUDP(n int) error {
	peer, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer peer.Close()
	if err := recvNothing(peer.(*net.UDPConn)); err != nil {
		return err
	}
	conn, err := net.Dial("udp4", peer.LocalAddr().String())
	if err != nil {
		return err
	}
	defer conn.Close()
	msg := make([]byte, udpDatagramSize)
	buf := make([]byte, 2*udpDatagramSize)
	for range n {
		if _, err := conn.Write(msg); err != nil {
			return err
		}
		if _, _, err := peer.ReadFrom(buf); err != nil {
			return err
		}
	}
	return nil
}

// recvNothing reads the empty socket conn once without waiting: a
// recvfrom that fails with EAGAIN.
func recvNothing(conn *net.UDPConn) error {
	raw, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var recvErr error
	err = raw.Read(func(fd uintptr) bool {
		_, _, recvErr = unix.Recvfrom(int(fd), make([]byte, 1), unix.MSG_DONTWAIT)
		return true
	})
	if err != nil {
		return err
	}
	if recvErr != unix.EAGAIN {
		return fmt.Errorf("recvfrom of an empty socket: %v, want EAGAIN", recvErr)
	}
	return nil
}
