package harness

import (
	"fmt"
	"os/exec"
	"os/user"
	"strings"
)

// FindNginx returns the nginx binary's path, or "" when there is none.
func FindNginx() string {
	if p, err := exec.LookPath("nginx"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx"} {
		if _, err := exec.LookPath(p); err == nil {
			return p
		}
	}
	return ""
}

// NginxConfig returns an nginx.conf for a plain hop: one worker process
// (a hop's CPU is then one process's, as the sidecar's is), one loopback
// listener forwarding every path to upstream over kept-alive HTTP/1.1 connections,
// with response buffering off so SSE passes event by event. Everything nginx
// writes goes under prefix. The upstream's own address goes in Host, as
// go-sdk on loopback refuses a foreign one. When the harness runs as root
// the workers keep its user instead of dropping to nobody, so they can use
// the temp prefix.
func NginxConfig(prefix, listen, upstream string) string {
	var b strings.Builder
	if u, err := user.Current(); err == nil && u.Uid == "0" {
		b.WriteString("user root;\n")
	}
	fmt.Fprintf(&b, `daemon off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path %[1]s/client_body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  upstream mcp {
    server %[3]s;
    keepalive 256;
  }
  server {
    listen %[2]s;
    client_max_body_size 64m;
    location / {
      proxy_pass http://mcp;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host %[3]s;
      proxy_buffering off;
      proxy_request_buffering off;
      proxy_read_timeout 1h;
      proxy_send_timeout 1h;
    }
  }
}
`, prefix, listen, upstream)
	return b.String()
}
