# A tiny Ruby WEBrick origin for proxy tests (the seeds' Mongrel line: a
# Ruby app server behind the proxy).
#
#   ruby webrick_app.rb
#
# binds 127.0.0.1 on a free port, prints "PORT <n>" on stdout and flushes,
# then serves, with logging off:
#   GET  /hello    200 "hello from webrick" (text/plain, no trailing newline)
#   POST /echo     200 with the request body (WEBrick also takes chunked
#                  request bodies), Content-Type copied from the request
#   GET  /chunked  200 with Transfer-Encoding: chunked, written as 3 chunks
#                  ("chunk 1\n" ...) 50 ms apart; ?n=N for N chunks
#   GET  /headers  200 text/plain, one "name: value" line per request header
#                  as WEBrick saw it (names lower-case, in arrival order;
#                  repeated headers come joined with ", ")
# Mounts are prefixes (/hello/x is /hello too); any other path is WEBrick's
# 404, a wrong method 405. It shuts down when its
# stdin reaches EOF, so a test that drops the pipe ends it.
require "webrick"

server = WEBrick::HTTPServer.new(
  BindAddress: "127.0.0.1",
  Port: 0,
  Logger: WEBrick::Log.new(File::NULL),
  AccessLog: [],
  DoNotReverseLookup: true,
)

def allow(req, res, *methods)
  return true if methods.include?(req.request_method)
  res.status = 405
  res["Allow"] = methods.join(", ")
  res["Content-Type"] = "text/plain"
  res.body = "method not allowed\n"
  false
end

server.mount_proc("/hello") do |req, res|
  next unless allow(req, res, "GET", "HEAD")
  res["Content-Type"] = "text/plain"
  res.body = "hello from webrick"
end

server.mount_proc("/echo") do |req, res|
  next unless allow(req, res, "POST")
  res["Content-Type"] = req["Content-Type"] || "application/octet-stream"
  res.body = req.body || ""
end

server.mount_proc("/chunked") do |req, res|
  next unless allow(req, res, "GET")
  n = (req.query["n"] || "3").to_i
  res["Content-Type"] = "text/plain"
  res.chunked = true
  # With chunked set, each write from a body proc goes out as one chunk.
  res.body = proc do |out|
    (1..n).each do |i|
      sleep 0.05 if i > 1
      out.write("chunk #{i}\n")
    end
  end
end

server.mount_proc("/headers") do |req, res|
  next unless allow(req, res, "GET", "POST")
  res["Content-Type"] = "text/plain"
  lines = []
  req.each { |name, value| lines << "#{name.downcase}: #{value}\n" }
  res.body = lines.join
end

# WEBrick listens from .new on; say where.
STDOUT.puts "PORT #{server.listeners[0].addr[1]}"
STDOUT.flush

Thread.new do
  STDIN.read
  server.shutdown
end
%w[INT TERM].each { |sig| trap(sig) { server.shutdown } }

server.start
