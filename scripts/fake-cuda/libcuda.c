/* A stand-in for the CUDA driver (libcuda.so), for profiling opbox's host-side launch path
 * with callgrind on a machine without a GPU (scripts/launch-profile).
 *
 * Every entry point cudarc and opbox call on the launch benchmark's path succeeds at once:
 * device memory is host memory, modules and functions are dummy handles, and cuLaunchKernel
 * returns without running anything. The launch path's own instructions (checks, packing,
 * lookups, the context check) are then all that is counted, which is what a host-path change
 * moves. Nothing here is timing evidence: a real driver spends ~2.8 us in cuLaunchKernel and
 * evicts caches, so device timings stay the judge (scripts/gpu-check). */
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <stdio.h>
typedef int CUresult;
typedef uint64_t CUdeviceptr;
static int ctx_obj, mod_obj, fn_obj, ev_obj;
static int stream_objs[64]; static int nstreams;
static __thread void *current;
#define OK return 0
CUresult cuInit(unsigned f){OK;}
CUresult cuDriverGetVersion(int*v){*v=13000;OK;}
CUresult cuDeviceGetCount(int*n){*n=1;OK;}
CUresult cuDeviceGet(int*d,int o){*d=o;OK;}
CUresult cuDeviceGetName(char*n,int len,int d){strncpy(n,"Fake GPU",len);OK;}
CUresult cuDeviceTotalMem_v2(size_t*b,int d){*b=(size_t)80<<30;OK;}
CUresult cuDeviceGetUuid(char*u,int d){memset(u,7,16);OK;}
CUresult cuDeviceGetUuid_v2(char*u,int d){memset(u,7,16);OK;}
CUresult cuMemGetInfo_v2(size_t*f,size_t*t){*f=(size_t)70<<30;*t=(size_t)80<<30;OK;}
CUresult cuDeviceGetAttribute(int*v,int a,int d){
  switch(a){case 75:*v=9;break;case 76:*v=0;break;case 1:*v=1024;break;case 2:case 3:*v=1024;break;
  case 4:case 5:case 6:*v=65535;break;case 8:*v=49152;break;case 10:*v=32;break;case 16:*v=132;break;
  case 97:*v=232448;break;default:*v=1;}
  OK;}
CUresult cuDevicePrimaryCtxRetain(void**c,int d){*c=&ctx_obj;OK;}
CUresult cuDevicePrimaryCtxRelease_v2(int d){OK;}
CUresult cuDevicePrimaryCtxGetState(int d,unsigned*f,int*a){*f=0;*a=1;OK;}
CUresult cuCtxSetCurrent(void*c){current=c;OK;}
CUresult cuCtxGetCurrent(void**c){*c=current;OK;}
CUresult cuCtxPushCurrent_v2(void*c){current=c;OK;}
CUresult cuCtxPopCurrent_v2(void**c){if(c)*c=current;OK;}
CUresult cuCtxGetDevice(int*d){*d=0;OK;}
CUresult cuCtxSynchronize(void){OK;}
CUresult cuCtxGetApiVersion(void*c,unsigned*v){*v=13000;OK;}
CUresult cuCtxGetFlags(unsigned*f){*f=0;OK;}
CUresult cuCtxSetFlags(unsigned f){OK;}
CUresult cuStreamCreate(void**s,unsigned f){*s=&stream_objs[nstreams++ % 64];OK;}
CUresult cuStreamCreateWithPriority(void**s,unsigned f,int p){*s=&stream_objs[nstreams++ % 64];OK;}
CUresult cuStreamDestroy_v2(void*s){OK;}
CUresult cuStreamSynchronize(void*s){OK;}
CUresult cuStreamQuery(void*s){OK;}
CUresult cuStreamWaitEvent(void*s,void*e,unsigned f){OK;}
CUresult cuEventCreate(void**e,unsigned f){*e=&ev_obj;OK;}
CUresult cuEventRecord(void*e,void*s){OK;}
CUresult cuEventRecordWithFlags(void*e,void*s,unsigned f){OK;}
CUresult cuEventDestroy_v2(void*e){OK;}
CUresult cuEventSynchronize(void*e){OK;}
CUresult cuEventQuery(void*e){OK;}
CUresult cuEventElapsedTime(float*ms,void*a,void*b){*ms=0;OK;}
CUresult cuEventElapsedTime_v2(float*ms,void*a,void*b){*ms=0;OK;}
CUresult cuMemAlloc_v2(CUdeviceptr*p,size_t n){*p=(CUdeviceptr)calloc(1,n?n:1);OK;}
CUresult cuMemAllocAsync(CUdeviceptr*p,size_t n,void*s){*p=(CUdeviceptr)calloc(1,n?n:1);OK;}
CUresult cuMemFree_v2(CUdeviceptr p){free((void*)p);OK;}
CUresult cuMemFreeAsync(CUdeviceptr p,void*s){free((void*)p);OK;}
CUresult cuMemsetD8_v2(CUdeviceptr p,unsigned char v,size_t n){memset((void*)p,v,n);OK;}
CUresult cuMemsetD8Async(CUdeviceptr p,unsigned char v,size_t n,void*s){memset((void*)p,v,n);OK;}
CUresult cuMemsetD32_v2(CUdeviceptr p,unsigned v,size_t n){for(size_t i=0;i<n;i++)((unsigned*)p)[i]=v;OK;}
CUresult cuMemsetD32Async(CUdeviceptr p,unsigned v,size_t n,void*s){for(size_t i=0;i<n;i++)((unsigned*)p)[i]=v;OK;}
CUresult cuMemcpyHtoD_v2(CUdeviceptr d,const void*s,size_t n){memcpy((void*)d,s,n);OK;}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d,const void*s,size_t n,void*st){memcpy((void*)d,s,n);OK;}
CUresult cuMemcpyDtoH_v2(void*d,CUdeviceptr s,size_t n){memcpy(d,(void*)s,n);OK;}
CUresult cuMemcpyDtoHAsync_v2(void*d,CUdeviceptr s,size_t n,void*st){memcpy(d,(void*)s,n);OK;}
CUresult cuMemcpyDtoD_v2(CUdeviceptr d,CUdeviceptr s,size_t n){memmove((void*)d,(void*)s,n);OK;}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d,CUdeviceptr s,size_t n,void*st){memmove((void*)d,(void*)s,n);OK;}
CUresult cuMemHostRegister_v2(void*p,size_t n,unsigned f){OK;}
CUresult cuMemHostUnregister(void*p){OK;}
CUresult cuModuleLoadData(void**m,const void*img){*m=&mod_obj;OK;}
CUresult cuModuleLoadDataEx(void**m,const void*img,unsigned n,void*o,void**v){*m=&mod_obj;OK;}
CUresult cuModuleUnload(void*m){OK;}
CUresult cuModuleGetFunction(void**f,void*m,const char*n){*f=&fn_obj;OK;}
static char globalbuf[4096];
CUresult cuModuleGetGlobal_v2(CUdeviceptr*p,size_t*b,void*m,const char*n){if(p)*p=(CUdeviceptr)globalbuf;if(b)*b=sizeof globalbuf;OK;}
CUresult cuFuncGetAttribute(int*v,int a,void*f){*v=a==0?1024:0;OK;}
CUresult cuFuncSetAttribute(void*f,int a,int v){OK;}
CUresult cuFuncSetCacheConfig(void*f,int c){OK;}
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int*n,void*f,int b,size_t s){*n=8;OK;}
CUresult cuLaunchKernel(void*f,unsigned gx,unsigned gy,unsigned gz,unsigned bx,unsigned by,unsigned bz,unsigned sh,void*s,void**p,void**e){OK;}
CUresult cuLaunchCooperativeKernel(void*f,unsigned gx,unsigned gy,unsigned gz,unsigned bx,unsigned by,unsigned bz,unsigned sh,void*s,void**p){OK;}
CUresult cuGetErrorString(int e,const char**s){*s="fake error";OK;}
CUresult cuGetErrorName(int e,const char**s){*s="CUDA_ERROR_FAKE";OK;}
CUresult cuPointerGetAttribute(void*d,int a,CUdeviceptr p){memset(d,0,8);OK;}
