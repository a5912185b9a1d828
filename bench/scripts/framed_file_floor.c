// The floor for a 1 MiB file over one HTTP/2 stream, against HTTP/1.1's
// sendfile, with nothing of HTTP in the way: one loopback connection, a
// 1-byte request answered by 1 MiB, the sender pinned to CPU 0 and the
// reader to CPU 1, the same as `h2_cpu_per_request.py -c1 -m1`.
//   mode 0: a 200-byte head, then sendfile (HTTP/1.1's path)
//   mode 1: preadv of 512 KiB at a time behind 9-byte frame headers, then
//           send (ringside's HTTP/2 path: two copies)
//   mode 2: writev of the frame headers and slices of an mmap of the file
//           (one copy; not used by ringside: a file truncated while it is
//           mapped kills the process with SIGBUS)
// Build and run (alternate the modes, several rounds, take medians):
//   cc -O2 -pthread bench/scripts/framed_file_floor.c -o /tmp/floor
//   for r in 1 2 3 4 5; do for m in 0 1 2; do /tmp/floor $m 2000 FILE; done; done
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/sendfile.h>
#include <sys/uio.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <time.h>
#define SZ (1<<20)
#define FR 16384
static int mode, n, port;
static const char *path;
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);sched_setaffinity(0,sizeof s,&s);}
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
static void *client(void *a){
  pin(1);
  int s=socket(AF_INET,SOCK_STREAM,0);struct sockaddr_in sa={.sin_family=AF_INET,.sin_port=htons(port),.sin_addr.s_addr=htonl(0x7f000001)};
  if(connect(s,(void*)&sa,sizeof sa))abort();
  int one=1;setsockopt(s,IPPROTO_TCP,TCP_NODELAY,&one,sizeof one);
  static char buf[1<<18];
  long want = (mode==0)? SZ+200 : SZ + 9*(SZ/FR) + 30;
  for(int i=0;i<n;i++){
    if(write(s,"x",1)!=1)abort();
    long got=0; while(got<want){ssize_t r=read(s,buf,sizeof buf); if(r<=0)abort(); got+=r;}
  }
  close(s);return 0;
}
int main(int argc,char**argv){
  mode=atoi(argv[1]); n=atoi(argv[2]); path=argv[3];
  int ls=socket(AF_INET,SOCK_STREAM,0);struct sockaddr_in sa={.sin_family=AF_INET,.sin_addr.s_addr=htonl(0x7f000001)};
  bind(ls,(void*)&sa,sizeof sa);listen(ls,1);socklen_t l=sizeof sa;getsockname(ls,(void*)&sa,&l);port=ntohs(sa.sin_port);
  pin(0);
  pthread_t t;pthread_create(&t,0,client,0);
  int c=accept(ls,0,0);int one=1;setsockopt(c,IPPROTO_TCP,TCP_NODELAY,&one,sizeof one);
  int fd=open(path,O_RDONLY);
  char *map=mmap(0,SZ,PROT_READ,MAP_SHARED|MAP_POPULATE,fd,0);
  const int batch=512*1024;
  char *out=malloc(batch+9*(batch/FR)+64);
  static char hdr[9*64]; char head[200]; memset(head,'h',200);
  struct rusage r0,r1; getrusage(RUSAGE_THREAD,&r0); double t0=now();
  char x;
  for(int i=0;i<n;i++){
    if(read(c,&x,1)!=1)abort();
    if(mode==0){ write(c,head,200); off_t o=0; while(o<SZ){ssize_t w=sendfile(c,fd,&o,SZ-o); if(w<=0)abort();} }
    else if(mode==1){
      write(c,head,30);
      for(long off=0;off<SZ;off+=batch){
        struct iovec iv[64]; int k=0; char *p=out;
        for(long f=0;f<batch;f+=FR){ p+=9; iv[k].iov_base=p; iv[k].iov_len=FR; p+=FR; k++; }
        if(preadv(fd,iv,k,off)!=batch)abort();
        long len=p-out, w=0; while(w<len){ssize_t r=send(c,out+w,len-w,0); if(r<=0)abort(); w+=r;}
      }
    } else {
      write(c,head,30);
      for(long off=0;off<SZ;off+=batch){
        struct iovec iv[128]; int k=0;
        for(long f=0;f<batch;f+=FR){ iv[k].iov_base=hdr; iv[k].iov_len=9; k++; iv[k].iov_base=map+off+f; iv[k].iov_len=FR; k++; }
        long len=batch+9*(batch/FR);
        // writev until all is sent (adjust iovecs on short writes)
        struct iovec *v=iv; int cnt=k;
        while(len>0){ ssize_t r=writev(c,v,cnt); if(r<=0)abort(); len-=r;
          while(cnt&&r>=(ssize_t)v->iov_len){r-=v->iov_len;v++;cnt--;}
          if(cnt){v->iov_base=(char*)v->iov_base+r; v->iov_len-=r;} }
      }
    }
  }
  double t1=now(); getrusage(RUSAGE_THREAD,&r1);
  pthread_join(t,0);
  double cpu=(r1.ru_utime.tv_sec-r0.ru_utime.tv_sec)+(r1.ru_utime.tv_usec-r0.ru_utime.tv_usec)/1e6+(r1.ru_stime.tv_sec-r0.ru_stime.tv_sec)+(r1.ru_stime.tv_usec-r0.ru_stime.tv_usec)/1e6;
  printf("mode %d: %.0f req/s, sender cpu %.1f us/req\n",mode,n/(t1-t0),cpu/n*1e6);
  return 0;
}
